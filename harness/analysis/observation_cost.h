#pragma once
// What watching a run costs. A matrix with the `probes` axis (all / none) has
// pairs of cells that differ only in whether the probes ran; per pair, the
// observed cell's step (the timed step plus the time its probes spent outside
// it, probe_ms; with sampled probes the eager steps they watched and the
// replayed ones between, each class's median weighted by its count) against
// the bare cell's median step. The goal is ≤ 3 %.
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

// Watching every step: ≤ 3 %. With the deep probes sampled (`every: N`), the
// steps they watch cost more and the ones between nearly nothing: ≤ 5 %
// amortised over the run.
inline constexpr double kObservationCostGoal = 0.03;
inline constexpr double kSampledObservationCostGoal = 0.05;

struct ObservationCost {
  std::string cell_id;        // the observed cell (its probe_costs are the hooks behind the cost)
  std::string observed_cell;  // probes=all, or "probes=alternate (even steps)"
  std::string bare_cell;      // probes=none
  double observed_step_ms = 0;   // timed step with the probes on (class medians, weighted)
  double observed_probe_ms = 0;  // time in probe hooks per step (the same)
  double bare_ms = 0;            // median step (+ its own bookkeeping) with the probes off
  double cost = 0;               // (observed_step_ms + observed_probe_ms) / bare_ms - 1
  // Step-to-step noise of the bare cell (robust σ of its timed steps over their
  // median; 0 when unknown): a cost within about twice this is not measured.
  double bare_noise = 0;
  // Standard error of the cost estimate itself, over the bare step: each side
  // is a weighted sum of class medians (eager, replayed), and a median of n
  // steps is uncertain by about 1.2533 σ / √n, σ its class's robust spread. It
  // is the larger part when sampled probes watched only a few eager steps
  // (three in a 100-step run). A class of fewer than three steps, whose own
  // spread cannot be told, borrows the bare cell's relative spread. 0 when
  // unknown (no per-step records).
  double estimate_noise = 0;
  // Run-to-run noise of one run of the bare cell (run_to_run_spread: the
  // spread of its `repeat` cells' median steps; 0 when the matrix has no
  // repeats). The cost compares two runs, so it counts twice.
  double run_noise = 0;
  double goal = kObservationCostGoal;  // kSampledObservationCostGoal when the observed cell samples probes
  // What the cost is judged against: the noises above in quadrature, the
  // run-to-run one for each of the two runs (a cost within about twice this
  // is not measured).
  double noise() const;
};

// One entry per (probes=all or a probe subset, probes=none) pair whose other
// axes are equal and which both passed with step timings, and one per passing
// `probes=alternate` cell (its even steps against its odd ones); in cell order.
std::vector<ObservationCost> observation_costs(const std::vector<CellResult>& cells);

// As results.json carries it (`observation_costs`: output only), with `met`
// (cost <= goal) and the observed cell's id as `cell`.
void to_json(nlohmann::json& j, const ObservationCost& c);

}  // namespace harness
