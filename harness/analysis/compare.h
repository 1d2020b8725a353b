#pragma once
// Differences between two runs of (usually) the same scenario, per cell id.
//
// Outcome changes: pass → any failure is a regression, failure → pass a fix,
// one failure → another (or to/from skip) a change; cells only in A are
// removed, only in B new (a new cell has no baseline, so it is no regression).
//
// Step time: each cell's own noise, as the run recorded it (CellResult::step_noise:
// median and robust spread, 1.4826·MAD, of its warm steps); for results without
// it, the per-step times without skipped (fp16 overflow) steps and without the
// first step when there are more than two (warm-up: allocation, autotuning).
// A change counts only when the medians differ by more than max(10% of A's
// median, 3 × the larger spread of the two). 10% is below what anyone acts on;
// 3 spreads keeps a noisy cell's jitter out, however large the change in percent.
// A slowdown that counts is a regression, a speed-up is reported. Every cell
// timed in both runs gets a NoiseCheck, counted or not, so the reader sees the
// noise each difference was judged against.
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

struct StepTimeStats {
  double median_ms = 0, spread_ms = 0;
  size_t steps = 0;
};

// One cell's step times in both runs and the threshold they were held to.
struct NoiseCheck {
  std::string cell;
  StepTimeStats a, b;
  double threshold_ms = 0;
  bool beyond_noise = false;
};

struct Comparison {
  std::string scenario_a, scenario_b;
  std::vector<CellChange> changes;  // ordered: B's cell order, then removed cells
  std::vector<NoiseCheck> noise;    // every cell timed in both, in B's order
  bool has_regression() const;
};

// Why two runs are of different scenarios (their scenario hashes differ;
// names them), or nothing. Runs without a recorded hash are not refused.
std::optional<std::string> different_scenarios(const RunResult& a, const RunResult& b);
// Per-step statistics after the exclusions above; nothing when no step qualifies.
std::optional<StepTimeStats> step_time_stats(const CellResult& cell);

// True when the medians differ beyond noise (the rule above).
bool step_time_changed(const StepTimeStats& a, const StepTimeStats& b, double* threshold_ms = nullptr);

Comparison compare(const RunResult& a, const RunResult& b);
int compare_exit_code(const Comparison& c);  // 0 no regression, 1 regressions

}  // namespace harness
