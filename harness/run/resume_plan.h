#pragma once
// What --resume does with each cell: take the result already in the run
// directory, or run the cell (again). A stored result is taken only when it
// belongs to this cell and was produced from the same spec (spec_hash.h).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"

namespace harness::run {

enum class ResumeAction {
  run,            // no usable result: a fresh cell
  reuse,          // the stored result stands
  rerun_changed,  // a result exists but the cell's spec changed since
};

struct ResumeDecision {
  ResumeAction action = ResumeAction::run;
  std::optional<CellResult> reused;  // set for reuse
  std::string why;                   // for rerun_changed: one line for the log and the report
};

// `stored` is what <cell dir>/result.json holds (nullopt: missing or unreadable);
// `spec_hash` the cell's hash now.
ResumeDecision decide_resume(const CellSpec& cell, const std::string& spec_hash,
                             const std::optional<CellResult>& stored);

struct ResumePlan {
  std::vector<ResumeDecision> decisions;  // one per cell, in order
  int reused() const;
  std::vector<std::string> rerun_changed(const std::vector<CellSpec>& cells) const;
};

// Reads each cell's result.json under `run_dir` and decides (without --resume:
// every cell runs). Cells in `rerun` run even when their stored result could
// be taken (`run --rerun-failed`: the ones that did not pass).
ResumePlan plan_resume(const std::vector<CellSpec>& cells, const std::string& run_dir, bool resume,
                       const std::set<std::string>& rerun = {});

}  // namespace harness::run
