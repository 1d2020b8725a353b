#pragma once
// Differences between two runs of (usually) the same scenario, per cell id.
//
// Outcome changes: pass → any failure is a regression, failure → pass a fix,
// one failure → another (or to/from skip) a change; cells only in A are
// removed, only in B new (a new cell has no baseline, so it is no regression).
//
// Step time: the per-step times of each cell, without skipped (fp16 overflow)
// steps and without the first step when there are more than two (warm-up:
// allocation, autotuning). A change counts only when the medians differ by more
// than max(10% of A's median, 3 × the larger robust spread (1.4826·MAD) of the
// two). 10% is below what anyone acts on; 3 spreads keeps a noisy machine's
// jitter out. A slowdown that counts is a regression, a speed-up is reported.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/results.h"

namespace harness {

enum class ChangeKind { regression, fix, changed, new_cell, removed_cell, slower, faster };
std::string_view to_string(ChangeKind k);

struct CellChange {
  std::string cell;
  ChangeKind kind = ChangeKind::changed;
  std::string before;  // outcome (with reason) or median step time in A; "" for a new cell
  std::string after;
  std::string detail;  // e.g. "+42.0% (median 120.0 → 170.4 ms; threshold 12.0 ms)"
};

struct Comparison {
  std::string scenario_a, scenario_b;
  std::vector<CellChange> changes;  // ordered: B's cell order, then removed cells
  bool has_regression() const;
};

struct StepTimeStats {
  double median_ms = 0, spread_ms = 0;
  size_t steps = 0;
};
// Per-step statistics after the exclusions above; nothing when no step qualifies.
std::optional<StepTimeStats> step_time_stats(const CellResult& cell);

// True when the medians differ beyond noise (the rule above).
bool step_time_changed(const StepTimeStats& a, const StepTimeStats& b, double* threshold_ms = nullptr);

Comparison compare(const RunResult& a, const RunResult& b);
int compare_exit_code(const Comparison& c);  // 0 no regression, 1 regressions

}  // namespace harness
