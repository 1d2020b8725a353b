#include "harness/analysis/compare.h"

#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
// So a failing kinds() comparison reads "regression", not a byte dump.
void PrintTo(ChangeKind k, std::ostream* os) { *os << to_string(k); }

namespace {
using testing::add_steps;
using testing::make_cell;

using Kinds = std::vector<ChangeKind>;
Kinds kinds(const Comparison& c) {
  Kinds out;
  for (auto& ch : c.changes) out.push_back(ch.kind);
  return out;
}

RunResult named_run(std::vector<CellResult> cells) {
  RunResult r;
  r.scenario = {{"name", "s"}};
  r.cells = std::move(cells);
  return r;
}

TEST(Compare, PassToFailureIsARegression) {
  auto a = named_run({make_cell({{"prefill", "batched"}}, Outcome::pass)});
  auto b = named_run({make_cell({{"prefill", "batched"}}, Outcome::hang, "stall", 5)});
  auto c = compare(a, b);
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::regression}));
  EXPECT_EQ(c.changes[0].before, "pass");
  EXPECT_EQ(c.changes[0].after, "hang (stall)");
  EXPECT_EQ(compare_exit_code(c), 1);
}

TEST(Compare, FailureToPassIsAFixAndNoRegression) {
  auto c = compare(named_run({make_cell({}, Outcome::fail, "non_finite", 2)}), named_run({make_cell({}, Outcome::pass)}));
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::fix}));
  EXPECT_EQ(compare_exit_code(c), 0);
}

TEST(Compare, NewAndRemovedCellsAreListedButAreNoRegression) {
  auto a = named_run({make_cell({{"seq_len", "128"}}, Outcome::pass)});
  auto b = named_run({make_cell({{"seq_len", "512"}}, Outcome::fail, "non_finite", 1)});
  auto c = compare(a, b);
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::new_cell, ChangeKind::removed_cell}));
  EXPECT_EQ(c.changes[0].cell, "seq_len=512");
  EXPECT_EQ(c.changes[1].cell, "seq_len=128");
  EXPECT_FALSE(c.has_regression());
}

TEST(Compare, OneFailureTurningIntoAnotherIsAChange) {
  auto c = compare(named_run({make_cell({}, Outcome::hang, "stall")}), named_run({make_cell({}, Outcome::crash, "signal")}));
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::changed}));
  EXPECT_FALSE(c.has_regression());
}

TEST(Compare, StepTimeJitterIsNoise) {
  auto ca = make_cell({}, Outcome::pass), cb = make_cell({}, Outcome::pass);
  add_steps(ca, {900, 100, 104, 97, 101, 99});
  add_steps(cb, {50, 106, 103, 108, 104, 105});  // medians 100 vs 105: 5% < 10%
  EXPECT_TRUE(compare(named_run({ca}), named_run({cb})).changes.empty());
}

TEST(Compare, ASlowdownBeyondTenPercentAndTheSpreadIsARegression) {
  auto ca = make_cell({}, Outcome::pass), cb = make_cell({}, Outcome::pass);
  add_steps(ca, {900, 100, 101, 99, 100, 100});
  add_steps(cb, {900, 150, 151, 149, 150, 150});
  auto c = compare(named_run({ca}), named_run({cb}));
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::slower}));
  EXPECT_EQ(c.changes[0].before, "100.0 ms");
  EXPECT_EQ(c.changes[0].after, "150.0 ms");
  EXPECT_EQ(compare_exit_code(c), 1);
}

TEST(Compare, ANoisyBaselineRaisesTheThreshold) {
  // A's steps spread widely (MAD 30 → spread 44.5, threshold 133 ms): +20% does not count.
  auto ca = make_cell({}, Outcome::pass), cb = make_cell({}, Outcome::pass);
  add_steps(ca, {500, 70, 130, 100, 70, 130});
  add_steps(cb, {500, 120, 120, 120, 120, 120});
  EXPECT_TRUE(compare(named_run({ca}), named_run({cb})).changes.empty());
}

TEST(Compare, ASpeedUpIsReportedButIsNoRegression) {
  auto ca = make_cell({}, Outcome::pass), cb = make_cell({}, Outcome::pass);
  add_steps(ca, {1, 200, 200, 200});
  add_steps(cb, {1, 100, 100, 100});
  auto c = compare(named_run({ca}), named_run({cb}));
  ASSERT_EQ(kinds(c), (Kinds{ChangeKind::faster}));
  EXPECT_EQ(compare_exit_code(c), 0);
}

// The cell's own recorded noise decides, and every timed cell shows it: the
// same +15% is noise for a cell whose warm steps spread 10 ms (threshold
// 3 × 10 = 30 ms) and a slowdown for one whose steps spread 1 ms (threshold
// max(10% of 100, 3) = 10 ms).
TEST(Compare, EachCellIsJudgedAgainstItsOwnRecordedNoise) {
  auto noisy_a = make_cell({{"c", "noisy"}}, Outcome::pass), noisy_b = noisy_a;
  auto quiet_a = make_cell({{"c", "quiet"}}, Outcome::pass), quiet_b = quiet_a;
  noisy_a.step_noise = StepNoise{100, 10, 20};
  noisy_b.step_noise = StepNoise{115, 10, 20};
  quiet_a.step_noise = StepNoise{100, 1, 20};
  quiet_b.step_noise = StepNoise{115, 1, 20};
  auto c = compare(named_run({noisy_a, quiet_a}), named_run({noisy_b, quiet_b}));
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].cell, "c=quiet");
  EXPECT_EQ(c.changes[0].kind, ChangeKind::slower);
  ASSERT_EQ(c.noise.size(), 2u);
  EXPECT_EQ(c.noise[0].cell, "c=noisy");
  EXPECT_DOUBLE_EQ(c.noise[0].threshold_ms, 30.0);
  EXPECT_FALSE(c.noise[0].beyond_noise);
  EXPECT_DOUBLE_EQ(c.noise[1].threshold_ms, 10.0);
  EXPECT_TRUE(c.noise[1].beyond_noise);
}

TEST(Compare, RunsOfDifferentScenariosAreNamedAndRunsWithoutAHashAreNot) {
  RunResult a = named_run({}), b = named_run({});
  a.scenario["hash"] = "1111";
  b.scenario = {{"name", "t"}, {"hash", "2222"}};
  EXPECT_EQ(different_scenarios(a, b),
            "the runs are of different scenarios: A is 's' (hash 1111), B is 't' (hash 2222)");
  b.scenario["hash"] = "1111";
  EXPECT_FALSE(different_scenarios(a, b));
  b.scenario.erase("hash");
  EXPECT_FALSE(different_scenarios(a, b));
}

TEST(StepTimeStats, DropsTheWarmUpStepAndSkippedSteps) {
  auto c = make_cell({}, Outcome::pass);
  add_steps(c, {5000, 10, 12, 1000});
  c.steps[3].skipped = true;
  auto s = step_time_stats(c);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->steps, 2u);
  EXPECT_DOUBLE_EQ(s->median_ms, 11.0);
}

}  // namespace
}  // namespace harness
