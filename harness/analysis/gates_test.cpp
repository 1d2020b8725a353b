#include "harness/analysis/gates.h"

#include <cmath>

#include <gtest/gtest.h>

#include "harness/analysis/judgement.h"
#include "harness/testing/results.h"
#include "harness/analysis/verdict.h"

namespace harness {
namespace {
using testing::make_cell;

TEST(Gates, NoSpecMeansNoChecks) { EXPECT_TRUE(check_gates(make_cell({}, Outcome::pass)).empty()); }

TEST(Gates, MinTokSComparesTheMedianThroughput) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.tok_s = 27.0;
  c.gates = testing::gates_from({{"min_tok_s", 300}, {"max_step_ms", nullptr}});
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].gate, "min_tok_s");
  EXPECT_EQ(g[0].cell, "default");
  EXPECT_EQ(g[0].required, "≥ 300 tok/s");
  EXPECT_EQ(g[0].measured, "27.0 tok/s");
  EXPECT_FALSE(g[0].met);
}

TEST(Gates, MaxStepMsComparesTheMedianStepBeyondItsNoise) {
  auto c = make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"max_step_ms", 400}});
  c.step_noise = StepNoise{450, 20, 5};
  c.metrics.step_ms_max = 480;
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].measured, "450.0 ms ± 20.0 (median ± scaled MAD of 5 steps; slowest 480.0 ms)");
  EXPECT_FALSE(g[0].met);
  c.step_noise = StepNoise{410, 20, 5};  // over the limit by less than its own noise
  EXPECT_TRUE(check_gates(c)[0].met);
}

TEST(Gates, RequireFiniteNamesTheFirstNonFiniteStep) {
  auto c = make_cell({}, Outcome::pass);
  testing::add_steps(c, {10, 10, 10});
  c.gates = testing::gates_from({{"require_finite", true}});
  EXPECT_TRUE(check_gates(c)[0].met);
  EXPECT_EQ(check_gates(c)[0].measured, "all finite");
  c.steps[1].loss = std::nan("");
  EXPECT_FALSE(check_gates(c)[0].met);
  EXPECT_EQ(check_gates(c)[0].measured, "non-finite at step 2");
}

TEST(Gates, AMissingMeasurementIsNotMet) {
  auto c = make_cell({}, Outcome::crash, "signal", 1);
  c.gates = testing::gates_from({{"min_tok_s", 300}, {"require_finite", true}});
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].measured, "n/a");
  EXPECT_FALSE(g[0].met);
  EXPECT_EQ(g[1].measured, "n/a (no steps)");
  EXPECT_FALSE(g[1].met);
}

TEST(Gates, SkippedCellsAreNotChecked) {
  auto c = make_cell({}, Outcome::skip, "no_cuda");
  c.gates = testing::gates_from({{"min_tok_s", 300}});
  EXPECT_TRUE(check_gates(c).empty());
}

TEST(Gates, BranchShareReadsTheWorstBranch) {
  auto c = make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"min_branch_share", 0.05}});
  c.branch_shares = {{"cmp", {0.5, 0.5, 0, 0}}, {"slc", {0.02, 0.02, 0, 0}}, {"win", {0.48, 0.48, 0, 0}}};
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].measured, "slc 0.020 (layer 0)");
  EXPECT_FALSE(g[0].met);
}

TEST(Gates, LossFallsComparesFirstAndLast) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.first_loss = 5.5;
  c.metrics.last_loss = 2.25;
  c.gates = testing::gates_from({{"require_loss_falls", true}});
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].measured, "5.5000 → 2.2500");
  EXPECT_TRUE(g[0].met);
}

TEST(GateReason, MapsGatesToReasonCodes) {
  EXPECT_EQ(gate_reason("min_tok_s"), "gate_min_tok_s");
  EXPECT_EQ(gate_reason("require_finite"), "non_finite");
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST(GatesTyped, BranchShareOutsideTheLimitFailsTheGateWithTheBranchAndLayerNamed) {
  auto c = testing::make_cell({{"prefill", "batched"}}, Outcome::pass);
  c.gates = testing::gates_from({{"min_branch_share", 0.1}});
  c.branch_shares["cmp"] = BranchShare{0.30, 0.40, 0, 1};
  c.branch_shares["slc"] = BranchShare{0.02, 0.35, 1, 0};
  c.branch_shares["win"] = BranchShare{0.30, 0.50, 0, 1};
  auto checks = check_gates(c);
  const GateCheck* share = nullptr;
  for (auto& x : checks)
    if (x.gate == "min_branch_share") share = &x;
  ASSERT_NE(share, nullptr) << "the branch-share gate must appear in the Acceptance Gates table";
  EXPECT_FALSE(share->met);
  EXPECT_NE(share->measured.find("slc 0.020"), std::string::npos) << share->measured;
  EXPECT_NE(share->measured.find("layer 1"), std::string::npos) << share->measured;
  EXPECT_EQ(judge(c).reason, "gate_branch_share");
}

TEST(GatesTyped, StepTimeGateJudgesTheMedianBeyondItsNoiseNotOneSlowStep) {
  auto c = testing::make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"max_step_ms", 800}});
  c.metrics.step_ms_max = 1044;
  c.step_noise = StepNoise{700, 40, 7};  // one slow step does not move the median
  auto checks = check_gates(c);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_TRUE(checks[0].met) << checks[0].measured;
  c.step_noise = StepNoise{900, 40, 7};  // the typical step is over the limit beyond its noise
  EXPECT_FALSE(check_gates(c)[0].met);
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST(GatesTyped, ATimingGateMissedOnABusyMachineIsNotJudgedAndWarns) {
  auto c = testing::make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"max_step_ms", 700}});
  c.step_noise = StepNoise{2700, 100, 5};
  c.load = MachineLoad{7.9, 8.2, 2};  // six busy loops beside the run on two cores
  auto checks = check_gates(c);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].judged);
  EXPECT_NE(checks[0].measured.find("not judged: machine busy (load 8.2 on 2 CPUs)"), std::string::npos);
  EXPECT_EQ(judge(c).kind, Judgement::Kind::pass);
  RunResult r;
  r.cells = {c};
  EXPECT_EQ(decide(r), Decision::conditional_go);
  c.load = MachineLoad{1.2, 1.4, 2};  // an idle machine: the same step time fails the gate
  EXPECT_TRUE(check_gates(c)[0].judged);
  EXPECT_EQ(judge(c).reason, "gate_max_step_ms");
}

}  // namespace
}  // namespace harness
