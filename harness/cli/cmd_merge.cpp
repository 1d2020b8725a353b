// `nsa-harness merge DIR... --out DIR`: the shards of one matrix joined into
// one run directory, analysed and reported as if it had run in one piece
// (harness/run/merge.h). Shards of different matrices: exit 2. Cells in no
// shard: listed as missing, decision NO-GO, exit 4 (the run is incomplete
// because a shard failed, not because the model did).
#include <fmt/core.h>

#include <filesystem>
#include <iostream>

#include "harness/analysis/analyze.h"
#include "harness/cli/commands.h"
#include "harness/run/platform.h"
#include "harness/report/render_all.h"
#include "harness/run/merge.h"
#include "harness/run/run_dir.h"

namespace harness::cli {
using run::now_iso8601;

int cmd_merge(const std::vector<std::string>& dirs, const std::string& out, const std::string& command_line) {
  std::vector<run::ShardRun> shards;
  RunResult merged;
  try {
    run::check_merge_output(dirs, out);
    shards = run::read_shards(dirs);
    merged = run::merge_shards(shards);
  } catch (const run::MergeRefused& e) {
    fmt::print(stderr, "nsa-harness: merge: {}\n", e.what());
    return kExitInvalidInput;
  }
  for (const auto& s : shards)
    if (!s.result) fmt::print(stderr, "nsa-harness: merge: {} has no results.json (the shard did not finish)\n", s.dir);

  const run::RunLock lock = run::lock_run_dir(out, now_iso8601(), "not merging into it");
  merged.command_line = command_line;
  analyze(merged);
  // Any exception from here on (a full disk, permissions) is the harness's: main maps it to exit 4.
  run::copy_merged_cells(merged, shards, out);
  render_all(merged, out);

  const RunCompletion& k = merged.completion;
  if (k.end == RunEnd::cells_missing) {
    fmt::print(stderr, "nsa-harness: merge: {} cell(s) in no shard:", k.not_run.size());
    for (const auto& id : k.not_run) fmt::print(stderr, " {}", id);
    fmt::print(stderr, "\n");
    fmt::print("decision: none ({} of {} cell(s) missing from every shard; results.json reads NO-GO)\n"
               "report: {}/report.md\n",
               k.not_run.size(), k.not_run.size() + merged.cells.size(), out);
    return kExitHarnessFailure;
  }
  fmt::print("decision: {}\nreport: {}/report.md\n", to_string(merged.decision), out);
  return exit_code_for(merged.decision);
}

}  // namespace harness::cli
