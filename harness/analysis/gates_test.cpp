#include "harness/analysis/gates.h"

#include <cmath>

#include <gtest/gtest.h>

#include "harness/analysis/judgement.h"
#include "harness/testing/results.h"
#include "harness/analysis/verdict.h"

namespace harness {
namespace {
using testing::make_cell;

// What each gate checked on `c` measured, and whether it was met, in order.
using Judged = std::vector<std::pair<std::string, bool>>;
Judged judged(const CellResult& c) {
  Judged out;
  for (auto& g : check_gates(c)) out.emplace_back(g.measured, g.met);
  return out;
}

TEST(Gates, NoSpecMeansNoChecks) { EXPECT_TRUE(check_gates(make_cell({}, Outcome::pass)).empty()); }

TEST(Gates, MinTokSComparesTheMedianThroughput) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.tok_s = 27.0;
  c.gates = testing::gates_from({{"min_tok_s", 300}, {"max_step_ms", nullptr}});
  EXPECT_EQ(judged(c), (Judged{{"27.0 tok/s", false}}));
  const GateCheck g = check_gates(c).at(0);
  EXPECT_EQ(g.gate, "min_tok_s");
  EXPECT_EQ(g.cell, "default");
  EXPECT_EQ(g.required, "≥ 300 tok/s");
}

TEST(Gates, MaxStepMsComparesTheMedianStepBeyondItsNoise) {
  auto c = make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"max_step_ms", 400}});
  c.step_noise = StepNoise{450, 20, 5};
  c.metrics.step_ms_max = 480;
  EXPECT_EQ(judged(c), (Judged{{"450.0 ms ± 20.0 (median ± scaled MAD of 5 steps; slowest 480.0 ms)", false}}));
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
  EXPECT_EQ(judged(c), (Judged{{"n/a", false}, {"n/a (no steps)", false}}));
}

TEST(Gates, SkippedCellsAreNotChecked) {
  auto c = make_cell({}, Outcome::skip, "no_cuda");
  c.gates = testing::gates_from({{"min_tok_s", 300}});
  EXPECT_TRUE(check_gates(c).empty());
}

TEST(Gates, BranchShareReadsTheWorstBranch) {
  auto c = make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"min_branch_share", 0.05}});
  c.gate_stats = GateStats{8, {LayerGateStats{0, 0.5, 0.02, 0.48}}};
  EXPECT_EQ(judged(c), (Judged{{"slc 0.020 (layer 0)", false}}));
}

// Gates that went non-finite leave null shares in the probe's table (as
// results.json has them): those layers measured nothing, the others still count.
TEST(Gates, NonFiniteSharesAreNoMeasurement) {
  auto c = make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"min_branch_share", 0.05}});
  const nlohmann::json nan_layer = {
      {"layer", 0}, {"share_cmp", nullptr}, {"share_slc", nullptr}, {"share_win", nullptr}};
  c.gate_stats = nlohmann::json{{"step", 8}, {"layers", {nan_layer}}}.get<GateStats>();
  EXPECT_EQ(judged(c), (Judged{{"n/a (no gate statistics)", false}}));
  c.gate_stats->layers.push_back(LayerGateStats{1, 0.3, 0.02, 0.68});
  EXPECT_EQ(judged(c), (Judged{{"slc 0.020 (layer 1)", false}}));
  EXPECT_EQ(nlohmann::json(*c.gate_stats)["layers"][0]["share_slc"].dump(), "null");  // written back as it was read
}

TEST(Gates, LossFallsComparesFirstAndLast) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.first_loss = 5.5;
  c.metrics.last_loss = 2.25;
  c.gates = testing::gates_from({{"require_loss_falls", true}});
  EXPECT_EQ(judged(c), (Judged{{"5.5000 → 2.2500", true}}));
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
  c.gate_stats = GateStats{8, {LayerGateStats{0, 0.30, 0.35, 0.50}, LayerGateStats{1, 0.40, 0.02, 0.30}}};
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

// A cell that shared its GPU with other cells (run --cells-per-gpu) measured
// the sharing: a missed throughput limit is a warning, never a failure; the
// same cell alone on its GPU fails it.
TEST(Gates, ThroughputOnASharedGpuIsNotJudged) {
  auto c = testing::make_cell({}, Outcome::pass);
  c.gates = testing::gates_from({{"min_tok_s", 300}});
  c.metrics.tok_s = 120;
  c.load = MachineLoad{1.0, 1.1, 16};
  c.gpu_sharers = 4;
  auto checks = check_gates(c);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].judged);
  EXPECT_NE(checks[0].measured.find("not judged: GPU shared with up to 3 other cell(s)"), std::string::npos);
  EXPECT_EQ(judge(c).kind, Judgement::Kind::pass);
  c.gpu_sharers = 1;
  EXPECT_TRUE(check_gates(c)[0].judged);
  EXPECT_EQ(judge(c).reason, "gate_min_tok_s");
}

}  // namespace
}  // namespace harness
