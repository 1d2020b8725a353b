#include "harness/analysis/gates.h"

#include <cmath>

#include <gtest/gtest.h>

#include "harness/analysis/test_support.h"

namespace harness {
namespace {
using testing::make_cell;

TEST(Gates, NoSpecMeansNoChecks) { EXPECT_TRUE(check_gates(make_cell({}, Outcome::pass)).empty()); }

TEST(Gates, MinTokSComparesTheMedianThroughput) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.tok_s = 27.0;
  c.extra["gates_spec"] = {{"min_tok_s", 300}, {"max_step_ms", nullptr}};
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].gate, "min_tok_s");
  EXPECT_EQ(g[0].cell, "default");
  EXPECT_EQ(g[0].required, "≥ 300 tok/s");
  EXPECT_EQ(g[0].measured, "27.0 tok/s");
  EXPECT_FALSE(g[0].met);
}

TEST(Gates, MaxStepMsUsesTheSlowestStep) {
  auto c = make_cell({}, Outcome::pass);
  testing::add_steps(c, {100, 450, 120});
  c.extra["gates_spec"] = {{"max_step_ms", 400}};
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].measured, "450.0 ms (slowest step)");
  EXPECT_FALSE(g[0].met);
  c.metrics.step_ms_max = 390;  // the recorded metric wins over the step list
  EXPECT_TRUE(check_gates(c)[0].met);
}

TEST(Gates, RequireFiniteNamesTheFirstNonFiniteStep) {
  auto c = make_cell({}, Outcome::pass);
  testing::add_steps(c, {10, 10, 10});
  c.extra["gates_spec"] = {{"require_finite", true}};
  EXPECT_TRUE(check_gates(c)[0].met);
  EXPECT_EQ(check_gates(c)[0].measured, "all finite");
  c.steps[1].loss = std::nan("");
  EXPECT_FALSE(check_gates(c)[0].met);
  EXPECT_EQ(check_gates(c)[0].measured, "non-finite at step 2");
}

TEST(Gates, AMissingMeasurementIsNotMet) {
  auto c = make_cell({}, Outcome::crash, "signal", 1);
  c.extra["gates_spec"] = {{"min_tok_s", 300}, {"require_finite", true}};
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].measured, "n/a");
  EXPECT_FALSE(g[0].met);
  EXPECT_EQ(g[1].measured, "n/a (no steps)");
  EXPECT_FALSE(g[1].met);
}

TEST(Gates, SkippedCellsAreNotChecked) {
  auto c = make_cell({}, Outcome::skip, "no_cuda");
  c.extra["gates_spec"] = {{"min_tok_s", 300}};
  EXPECT_TRUE(check_gates(c).empty());
}

TEST(Gates, BranchShareReadsTheWorstBranch) {
  auto c = make_cell({}, Outcome::pass);
  c.extra["gates_spec"] = {{"min_branch_share", 0.05}};
  c.extra["branch_share"] = {{"cmp", 0.5}, {"slc", 0.02}, {"win", 0.48}};
  auto g = check_gates(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].measured, "slc 0.020");
  EXPECT_FALSE(g[0].met);
}

TEST(Gates, LossFallsComparesFirstAndLast) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.first_loss = 5.5;
  c.metrics.last_loss = 2.25;
  c.extra["gates_spec"] = {{"require_loss_falls", true}};
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
