#include "harness/analysis/observation_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;

CellResult timed(AxisValues axes, double step_ms, std::optional<double> probe_ms) {
  CellResult c = make_cell(std::move(axes), Outcome::pass);
  c.metrics.step_ms_median = step_ms;
  c.metrics.probe_ms_median = probe_ms;
  return c;
}

TEST(ObservationCost, PairsCellsThatDifferOnlyInProbes) {
  std::vector<CellResult> cells = {
      timed({{"seq_len", "512"}, {"probes", "all"}}, 102.0, 1.0),
      timed({{"seq_len", "512"}, {"probes", "none"}}, 99.0, 1.0),
      timed({{"seq_len", "1024"}, {"probes", "all"}}, 210.0, std::nullopt),
      timed({{"seq_len", "1024"}, {"probes", "none"}}, 200.0, std::nullopt)};
  auto costs = observation_costs(cells);
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].observed_cell, "seq_len=512,probes=all");
  EXPECT_EQ(costs[0].bare_cell, "seq_len=512,probes=none");
  // (102 + 1) / (99 + 1) - 1 = 3 %.
  EXPECT_NEAR(costs[0].cost, 0.03, 1e-12);
  EXPECT_NEAR(costs[1].cost, 0.05, 1e-12);  // 210 / 200 - 1
}

// No partner, a failed one, another axis: axis_pairs_test.cpp, with the dense baseline.

TEST(ObservationCost, EachProbeSubsetIsComparedWithTheBareCell) {
  std::vector<CellResult> cells = {timed({{"probes", "all"}}, 120.0, 0.0), timed({{"probes", "cupti"}}, 110.0, 0.0),
                                   timed({{"probes", "finite+gates"}}, 100.0, 5.0),
                                   timed({{"probes", "none"}}, 100.0, 0.0)};
  auto costs = observation_costs(cells);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[1].observed_cell, "probes=cupti");
  EXPECT_NEAR(costs[0].cost, 0.20, 1e-12);
  EXPECT_NEAR(costs[1].cost, 0.10, 1e-12);
  EXPECT_NEAR(costs[2].cost, 0.05, 1e-12);  // the probes' time outside the step counts
}

TEST(ObservationCost, BareCellNoiseIsTheRobustSpreadOfItsTimedSteps) {
  CellResult bare = timed({{"probes", "none"}}, 100.0, 0.0);
  // A warm-up step (ignored), then 90, 95, 100, 105, 110: median 100.
  for (double ms : {900.0, 90.0, 95.0, 100.0, 105.0, 110.0}) bare.steps.push_back(StepRecord{0, 1.0, ms});
  auto costs = observation_costs({timed({{"probes", "all"}}, 101.0, 0.0), bare});
  ASSERT_EQ(costs.size(), 1u);
  // |x - 100| = 10, 5, 0, 5, 10 → MAD 5 → σ ≈ 1.4826 × 5 = 7.413 ms of 100.
  EXPECT_NEAR(costs[0].bare_noise, 0.07413, 1e-5);
}

// Probes sampled every N steps: the steps they watch run eagerly and cost
// more, the replayed steps between cost little. Each class's median counts by
// its share of the steps, so the rare expensive step is neither lost (as in a
// median over all steps) nor inflated by one noisy step (as in a mean).
TEST(ObservationCost, SampledProbesCostTheirWatchedStepsByTheirShare) {
  CellResult on = timed({{"probes", "all"}}, 0.0, 0.0);
  auto add = [&](double ms, double probe, StepExec exec) {
    StepRecord s{int(on.steps.size()) + 1, 1.0, ms};
    s.probe_ms = probe, s.exec = exec;
    on.steps.push_back(s);
  };
  add(900, 9, StepExec::eager);    // warm-up: not counted
  add(400, 0, StepExec::capture);  // capture: not counted
  for (double ms : {100.0, 101.0, 99.0, 100.0, 500.0 /* a busy-machine spike */, 100.0, 100.0}) add(ms, 0.1, StepExec::replay);
  add(150, 5, StepExec::eager);    // the one step the sampled probes watched
  CellResult bare = timed({{"probes", "none"}}, 100.0, 0.0);
  auto costs = observation_costs({on, bare});
  ASSERT_EQ(costs.size(), 1u);
  // 7 replays (median 100 ms, 0.1 ms hooks) and 1 eager (150 + 5) of 8 steps.
  EXPECT_NEAR(costs[0].observed_step_ms, (7 * 100.0 + 150.0) / 8, 1e-9);
  EXPECT_NEAR(costs[0].observed_probe_ms, (7 * 0.1 + 5.0) / 8, 1e-9);
  EXPECT_NEAR(costs[0].cost, ((7 * 100.1 + 155.0) / 8) / 100.0 - 1.0, 1e-9);
  EXPECT_EQ(costs[0].goal, kObservationCostGoal);  // nothing sampled: watching every step
  on.sampled_probes = {{"finite", 50}, {"cupti", 50}};
  EXPECT_EQ(observation_costs({on, bare})[0].goal, kSampledObservationCostGoal);
}

// Sampled probes that run at replayed steps (the tensor probes read what the
// graph rewrites): those steps are replays like the rest, but their probes'
// work makes them a class of their own — by which sampled probes ran, so a
// cheap one sampled often does not hide the deep set sampled rarely in its
// median. Here steps 10 and 20 of 20 (every: 10) and a checksum every 2 steps.
TEST(ObservationCost, SampledStepsThatReplayCountByTheirShare) {
  CellResult on = timed({{"probes", "all"}}, 0.0, 0.0);
  on.sampled_probes = {{"finite", 10}, {"gates", 10}, {"checksum", 2}};
  for (int step = 1; step <= 20; ++step) {
    StepRecord s{step, 1.0, step == 1 ? 900.0 : 100.0};
    s.exec = step == 1 ? StepExec::eager : step == 2 ? StepExec::capture : StepExec::replay;
    s.probe_ms = step % 10 == 0 ? 30.0 : step % 2 == 0 ? 0.6 : 0.5;
    if (step % 10 == 0) s.step_ms = 101.0;
    on.steps.push_back(s);
  }
  CellResult bare = timed({{"probes", "none"}}, 100.0, 0.0);
  const auto costs = observation_costs({on, bare});
  ASSERT_EQ(costs.size(), 1u);
  // 18 timed steps: 9 plain replays (100 + 0.5), 7 with the checksum (100 +
  // 0.6: steps 4, 6, 8, 12, 14, 16, 18) and 2 with the deep set (101 + 30).
  EXPECT_NEAR(costs[0].observed_step_ms, (16 * 100.0 + 2 * 101.0) / 18, 1e-9);
  EXPECT_NEAR(costs[0].observed_probe_ms, (9 * 0.5 + 7 * 0.6 + 2 * 30.0) / 18, 1e-9);
  EXPECT_NEAR(costs[0].cost, ((9 * 100.5 + 7 * 100.6 + 2 * 131.0) / 18) / 100.0 - 1.0, 1e-9);
}

// With `repeat: 2` the bare cell's two runs give the run-to-run noise (their
// median steps 100 and 104 ms: σ = 2√2 over 102), and the cost, a comparison of
// two runs, counts it twice in quadrature with the step noise and the estimate.
TEST(ObservationCost, RepeatedRunsGiveTheRunToRunNoise) {
  std::vector<CellResult> cells = {timed({{"probes", "all"}, {"repeat", "1"}}, 103.0, 0.0),
                                   timed({{"probes", "none"}, {"repeat", "1"}}, 100.0, 0.0),
                                   timed({{"probes", "all"}, {"repeat", "2"}}, 105.0, 0.0),
                                   timed({{"probes", "none"}, {"repeat", "2"}}, 104.0, 0.0)};
  const auto costs = observation_costs(cells);
  ASSERT_EQ(costs.size(), 2u);
  const double run = 2.0 * std::sqrt(2.0) / 102.0;
  EXPECT_NEAR(costs[0].run_noise, run, 1e-12);
  EXPECT_NEAR(costs[1].run_noise, run, 1e-12);
  EXPECT_NEAR(costs[0].cost, 0.03, 1e-12);
  // No per-step records: the step noise and the estimate are unknown (0), the runs' part is all there is.
  EXPECT_NEAR(costs[0].noise(), std::sqrt(2.0) * run, 1e-12);
  EXPECT_EQ(observation_costs({cells[0], cells[1]})[0].run_noise, 0.0) << "one run: not measured";
}

// The cost's own uncertainty: each class median's standard error, 1.2533 σ /
// √n with σ the class's robust spread, weighted by the class's share, in
// quadrature over classes and sides, over the bare step. Written out by hand
// for three watched eager steps among replays, and for a class too small to
// have a spread (it borrows the bare cell's relative one).
TEST(ObservationCost, EstimateNoiseIsTheStandardErrorOfTheWeightedMedians) {
  const double k = std::sqrt(std::acos(-1.0) / 2);  // the median's efficiency factor
  CellResult on = timed({{"probes", "all"}}, 0.0, 0.0);
  auto add = [](CellResult& c, double ms, double probe, StepExec exec) {
    StepRecord s{int(c.steps.size()) + 1, 1.0, ms};
    s.probe_ms = probe, s.exec = exec;
    c.steps.push_back(s);
  };
  add(on, 900, 0, StepExec::eager);  // warm-up
  add(on, 400, 0, StepExec::capture);
  for (int i = 0; i < 7; ++i) add(on, 25.0, 0.0, StepExec::replay);  // no spread: no error
  // Watched eager steps, step + probe: 50, 60, 80 → median 60, MAD 10.
  add(on, 49, 1, StepExec::eager), add(on, 58, 2, StepExec::eager), add(on, 77, 3, StepExec::eager);
  CellResult bare = timed({{"probes", "none"}}, 0.0, 0.0);
  add(bare, 900, 0, StepExec::eager);
  for (int i = 0; i < 10; ++i) add(bare, 25.0, 0.0, StepExec::replay);
  auto costs = observation_costs({on, bare});
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_NEAR(costs[0].bare_ms, 25.0, 1e-12);
  const double se_eager = k * 1.4826 * 10 / std::sqrt(3.0);
  EXPECT_NEAR(costs[0].estimate_noise, (3.0 / 10) * se_eager / 25.0, 1e-9);
  EXPECT_NEAR(costs[0].noise(), costs[0].estimate_noise, 1e-12);  // the bare cell has no spread
  // Two eager steps only (50 and 60 ms): no robust spread, so they take the
  // larger of the bare cell's (here 1.4826 × 1 ms of 25 ms) at their median
  // (55 ms) and their own sample deviation, |60 - 50| / √2.
  on.steps.pop_back();
  bare.steps.clear();
  add(bare, 900, 0, StepExec::eager);
  for (double ms : {24.0, 25.0, 26.0, 25.0, 24.0, 26.0, 25.0}) add(bare, ms, 0.0, StepExec::replay);
  costs = observation_costs({on, bare});
  ASSERT_EQ(costs.size(), 1u);
  const double rel = 1.4826 * 1.0 / 25.0;
  EXPECT_NEAR(costs[0].bare_noise, rel, 1e-9);
  const double se_two = k * std::max(rel * 55.0, 10.0 / std::sqrt(2.0)) / std::sqrt(2.0);
  EXPECT_GT(10.0 / std::sqrt(2.0), rel * 55.0) << "this case checks the two steps' own deviation";
  const double se_bare = k * 1.4826 / std::sqrt(7.0);
  EXPECT_NEAR(costs[0].estimate_noise, std::hypot((2.0 / 9) * se_two, se_bare) / 25.0, 1e-9);
  EXPECT_NEAR(costs[0].noise(), std::hypot(costs[0].bare_noise, costs[0].estimate_noise), 1e-12);
}

TEST(ObservationCost, AlternateCellComparesItsEvenStepsWithItsOddOnes) {
  CellResult c = timed({{"probes", "alternate"}}, 0.0, 0.0);
  // step 1 (warm-up, ignored), then odd steps 100/102/98 ms with 0.5 ms of
  // bookkeeping, even steps 110/112/108 ms with 4 ms of hooks.
  const double ms[] = {900, 110, 100, 112, 102, 108, 98};
  for (int i = 0; i < 7; ++i) {
    StepRecord s{i + 1, 1.0, ms[i]};
    s.observed = (i + 1) % 2 == 0;
    s.probe_ms = *s.observed ? 4.0 : 0.5;
    c.steps.push_back(s);
  }
  auto costs = observation_costs({c});
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs[0].observed_cell, "probes=alternate (even steps)");
  EXPECT_DOUBLE_EQ(costs[0].observed_step_ms, 110.0);
  EXPECT_DOUBLE_EQ(costs[0].observed_probe_ms, 4.0);
  EXPECT_DOUBLE_EQ(costs[0].bare_ms, 100.5);
  EXPECT_NEAR(costs[0].cost, 114.0 / 100.5 - 1.0, 1e-12);
  // odd steps 98, 100, 102: MAD 2 → σ = 2.9652 ms of 100.
  EXPECT_NEAR(costs[0].bare_noise, 0.029652, 1e-6);
  // A run without the per-step marks (an older child) gives nothing rather than a guess.
  for (auto& s : c.steps) s.observed.reset();
  EXPECT_TRUE(observation_costs({c}).empty());
}

// `probes: alternate` with sampled probes: most even steps replay the graph,
// the one a probe watched from inside runs eagerly and costs more. It counts by
// its share of the even steps, as in the all-vs-none pairs; a plain median of
// the even steps would call the probes free.
TEST(ObservationCost, AlternateCellWeighsARareWatchedEagerStepByItsShare) {
  CellResult c = timed({{"probes", "alternate"}}, 0.0, 0.0);
  auto add = [&](double ms, double probe, StepExec exec, bool observed) {
    StepRecord s{int(c.steps.size()) + 1, 1.0, ms};
    s.probe_ms = probe, s.exec = exec, s.observed = observed;
    c.steps.push_back(s);
  };
  add(900, 9, StepExec::eager, false);   // warm-up: not counted
  add(400, 0, StepExec::capture, true);  // capture: not counted
  for (int i = 0; i < 10; ++i) {
    add(100, 0.1, StepExec::replay, false);
    add(100, 0.1, StepExec::replay, true);
  }
  add(100, 0.1, StepExec::replay, false);
  add(150, 5, StepExec::eager, true);    // the even step the sampled probes watched
  auto costs = observation_costs({c});
  ASSERT_EQ(costs.size(), 1u);
  // Even steps: 10 replays (100 ms + 0.1) and 1 eager (150 + 5) of 11; odd: 11 replays.
  EXPECT_NEAR(costs[0].observed_step_ms, (10 * 100.0 + 150.0) / 11, 1e-9);
  EXPECT_NEAR(costs[0].observed_probe_ms, (10 * 0.1 + 5.0) / 11, 1e-9);
  EXPECT_NEAR(costs[0].bare_ms, 100.1, 1e-9);
  EXPECT_NEAR(costs[0].cost, ((10 * 100.1 + 155.0) / 11) / 100.1 - 1.0, 1e-9);
}

}  // namespace
}  // namespace harness
