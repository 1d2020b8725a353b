#pragma once
// `nsa-harness merge DIR... --out DIR`: the shards of one matrix (shard.h),
// each run on its own machine, joined into one run directory whose
// results.json and report.md are written by the normal report code.
//
// Only slices of the same matrix join: the same scenario (hash), the same
// harness (source revision), the same cell list and slice count, each slice
// once. Anything else is refused as bad input — a report mixing two
// scenarios or two builds would read as one verdict and be none.
//
// A cell in no shard (its shard failed, was cancelled, or never wrote a
// result) is `missing`: listed in the report and results.json, never judged,
// and the decision is NO-GO until it is run (verdict.h).
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness::run {

// Shards that cannot be merged (bad input: exit 2).
class MergeRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A shard's run directory as merge found it.
struct ShardRun {
  std::string dir;
  std::optional<RunResult> result;  // nullopt: no results.json (the shard never finished)
};

// Reads DIR/results.json of each directory. A directory without one is a
// shard that did not finish (its cells become missing); one that is not a
// directory, or holds an unreadable results.json, is refused.
std::vector<ShardRun> read_shards(const std::vector<std::string>& dirs);

// The merged run, not yet analysed: cells in the matrix's order, each as its
// shard recorded it; RunEnd::cells_missing with the missing ids in
// completion.not_run when any. Throws MergeRefused.
RunResult merge_shards(const std::vector<ShardRun>& shards);

// Copies each merged cell's directory (events, traces, result.json) from its
// shard into OUT/cells, replacing an older copy. Artifact paths in results
// are relative to the run directory, so they hold in OUT as they did in the
// shard. Throws std::runtime_error naming the path (a harness failure).
void copy_merged_cells(const RunResult& merged, const std::vector<ShardRun>& shards, const std::string& out_dir);

// Refuses (MergeRefused) an output directory that is, or is inside, one of
// the shards: the copy would read what it writes.
void check_merge_output(const std::vector<std::string>& dirs, const std::string& out_dir);

}  // namespace harness::run
