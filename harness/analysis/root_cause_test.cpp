#include "harness/analysis/root_cause.h"

#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
namespace {

using testing::finding;
using testing::make_cell;

CellResult failing(AxisValues axes, Outcome o, const Finding& f, std::vector<Finding> more = {}) {
  CellResult c = make_cell(std::move(axes), o, f.code);
  c.findings = {f};
  c.findings.insert(c.findings.end(), more.begin(), more.end());
  return c;
}

// The nan_fp16 shape: three sequential-prefill hangs that batched prefill
// bypasses, and one pure-fp16 NaN with nothing passing in its place.
RunResult hangs_and_a_nan() {
  const Finding stall = finding("stall", Severity::blocking, "no event for 60 s", 1, "step 1 / backward");
  const Finding nan = finding("non_finite", Severity::blocking, "first non-finite value", 2, "optimizer");
  RunResult r;
  for (const char* p : {"fp32", "bf16", "fp16"}) {
    r.cells.push_back(failing({{"precision", p}, {"prefill", "sequential"}, {"seq_len", "2048"}}, Outcome::hang, stall));
    r.cells.push_back(make_cell({{"precision", p}, {"prefill", "batched"}, {"seq_len", "2048"}}, Outcome::pass));
  }
  r.cells.push_back(failing({{"precision", "fp16"}, {"prefill", "batched"}, {"seq_len", "128"}}, Outcome::fail, nan,
                            {finding("adamw_eps_underflow", Severity::warning, "AdamW eps rounds to 0", 0, "optimizer"),
                             finding("dead_params", Severity::blocking, "2 parameter(s) never received a gradient"),
                             finding("invariant", Severity::blocking, "selected blocks break an invariant", 3)}));
  r.attributions = {{"prefill", "sequential", "batched", "prefill=batched bypasses the hang",
                     {r.cells[0].id, r.cells[1].id}}};
  return r;
}

TEST(RootCause, AFailureWithoutWorkaroundComesBeforeMoreCellsThatHaveOne) {
  const Diagnosis d = diagnose(hangs_and_a_nan());
  ASSERT_EQ(d.failures.size(), 2u);
  EXPECT_EQ(d.failures[0].reason, "non_finite");
  EXPECT_FALSE(d.failures[0].worked_around);
  EXPECT_EQ(d.failures[1].reason, "stall");
  EXPECT_EQ(d.failures[1].cause.cells.size(), 3u);  // one cause, three cells
  EXPECT_TRUE(d.failures[1].worked_around);
  EXPECT_EQ(d.failures[1].workarounds.size(), 3u);
  ASSERT_EQ(d.failures[1].attributions.size(), 1u);
  EXPECT_TRUE(d.failures[0].attributions.empty());
}

TEST(RootCause, TheWarningThatLeadsToTheFailureIsItsWhyNotAConsequence) {
  const Diagnosis d = diagnose(hangs_and_a_nan());
  const FailureGroup& nan = d.failures[0];
  ASSERT_TRUE(nan.precursor.has_value());
  EXPECT_EQ(nan.precursor->finding.code, "adamw_eps_underflow");
  ASSERT_EQ(nan.consequences.size(), 2u);
  EXPECT_EQ(nan.consequences[0].finding.code, "dead_params");
  EXPECT_EQ(nan.consequences[1].finding.code, "invariant");
}

TEST(RootCause, AWrongAnswerIsTheRootCauseEvenInFewerCells) {
  RunResult r = hangs_and_a_nan();
  r.cells.push_back(failing({{"fault", "causal_leak"}}, Outcome::fail,
                            finding("causality", Severity::blocking, "future tokens change outputs")));
  const Diagnosis d = diagnose(r);
  EXPECT_EQ(d.failures[0].reason, "causality");
  EXPECT_TRUE(d.failures[0].wrong_answer);
}

TEST(RootCause, AmongEqualsTheEarlierStepLeads) {
  RunResult r;
  r.cells.push_back(failing({{"fault", "a"}}, Outcome::fail, finding("dead_params", Severity::blocking, "dead", 9)));
  r.cells.push_back(failing({{"fault", "b"}}, Outcome::crash, finding("signal", Severity::blocking, "SIGSEGV", 2)));
  const Diagnosis d = diagnose(r);
  ASSERT_EQ(d.failures.size(), 2u);
  EXPECT_EQ(d.failures[0].reason, "signal");
}

TEST(RootCause, WarningsOfPassingCellsAreKeptApartAndNothingFailedMeansNoCause) {
  RunResult r;
  r.cells.push_back(make_cell({{"precision", "fp16"}}, Outcome::pass));
  r.cells.back().findings = {finding("loss_scale_skips", Severity::warning, "1 step skipped")};
  const Diagnosis d = diagnose(r);
  EXPECT_TRUE(d.failures.empty());
  ASSERT_EQ(d.other_warnings.size(), 1u);
  EXPECT_EQ(d.other_warnings[0].cells, std::vector<std::string>{"precision=fp16"});
}

TEST(RootCause, AFailureWithoutAFindingIsNamedFromItsExit) {
  RunResult r;
  CellResult c = make_cell({{"x", "1"}}, Outcome::crash, "signal");
  c.findings.clear();
  c.term_signal = 11;
  r.cells = {c};
  const Diagnosis d = diagnose(r);
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].cause.finding.title, "crash without a recorded finding");
  EXPECT_EQ(d.failures[0].cause.finding.detail, "Killed by signal 11.");
}

}  // namespace
}  // namespace harness
