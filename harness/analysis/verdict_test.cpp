#include "harness/analysis/verdict.h"

#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;
using testing::warning;

RunResult run_of(std::vector<CellResult> cells) {
  RunResult r;
  r.cells = std::move(cells);
  return r;
}

TEST(Decide, EveryCellPassingWithoutWarningsIsGo) {
  auto r = run_of({make_cell({{"precision", "fp32"}}, Outcome::pass), make_cell({{"precision", "bf16"}}, Outcome::pass)});
  EXPECT_EQ(decide(r), Decision::go);
  EXPECT_EQ(exit_code_for(decide(r)), 0);
}

TEST(Decide, SkippedCellsDoNotSpoilAGo) {
  auto r = run_of({make_cell({{"device", "cpu"}}, Outcome::pass), make_cell({{"device", "cuda"}}, Outcome::skip, "no_cuda")});
  EXPECT_EQ(decide(r), Decision::go);
}

TEST(Decide, AWarningAloneMakesAGoConditional) {
  auto c = make_cell({}, Outcome::pass);
  c.findings.push_back(warning("adamw_eps_underflow", "AdamW eps rounds to 0 in fp16"));
  auto b = explain_decision(run_of({c}));
  EXPECT_EQ(b.decision, Decision::conditional_go);
  EXPECT_EQ(b.warning_codes, std::vector<std::string>{"adamw_eps_underflow"});
}

TEST(Decide, FailureBypassedByAFlagIsConditional) {
  auto r = run_of({make_cell({{"prefill", "sequential"}}, Outcome::hang, "stall", 5),
                   make_cell({{"prefill", "batched"}}, Outcome::pass)});
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::conditional_go);
  ASSERT_EQ(b.workarounds.size(), 1u);
  EXPECT_EQ(b.workarounds[0].failing_cell, "prefill=sequential");
  EXPECT_EQ(b.workarounds[0].passing_cell, "prefill=batched");
  EXPECT_EQ(b.workarounds[0].settings, (AxisValues{{"prefill", "batched"}}));
  EXPECT_EQ(exit_code_for(b.decision), 3);
}

TEST(Decide, PassingOnlyAtAnotherWorkloadIsNoGo) {
  // A shorter sequence passing does not make the requested one work.
  auto r = run_of({make_cell({{"seq_len", "128"}}, Outcome::pass),
                   make_cell({{"seq_len", "512"}}, Outcome::fail, "non_finite", 2)});
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::no_go);
  EXPECT_EQ(b.no_workaround, std::vector<std::string>{"seq_len=512"});
  EXPECT_EQ(exit_code_for(b.decision), 1);
}

TEST(Decide, APlantedFaultIsNotAWorkaround) {
  auto r = run_of({make_cell({{"fault", "none"}}, Outcome::pass),
                   make_cell({{"fault", "gate_zero_init"}}, Outcome::fail, "gates_constant")});
  EXPECT_EQ(decide(r), Decision::no_go);
}

TEST(Decide, ASingleFailingCellIsNoGo) {
  EXPECT_EQ(decide(run_of({make_cell({}, Outcome::crash, "cuda_illegal_address", 1)})), Decision::no_go);
}

TEST(Decide, OneFailingCellWithoutWorkaroundOutweighsOthersWithOne) {
  auto r = run_of({make_cell({{"prefill", "sequential"}, {"seq_len", "128"}}, Outcome::hang, "stall"),
                   make_cell({{"prefill", "batched"}, {"seq_len", "128"}}, Outcome::pass),
                   make_cell({{"prefill", "sequential"}, {"seq_len", "512"}}, Outcome::hang, "stall"),
                   make_cell({{"prefill", "batched"}, {"seq_len", "512"}}, Outcome::fail, "non_finite")});
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::no_go);
  EXPECT_EQ(b.no_workaround,
            (std::vector<std::string>{"prefill=sequential,seq_len=512", "prefill=batched,seq_len=512"}));
}

TEST(Decide, AWorkaroundMayFlipTwoSettings) {
  // Sequential prefill hangs; fp16 goes non-finite. Only batched + bf16 passes,
  // and it is the workaround for all three failing cells.
  auto r = run_of({make_cell({{"prefill", "sequential"}, {"precision", "fp16"}}, Outcome::hang, "stall", 5),
                   make_cell({{"prefill", "sequential"}, {"precision", "bf16"}}, Outcome::hang, "stall", 5),
                   make_cell({{"prefill", "batched"}, {"precision", "fp16"}}, Outcome::fail, "non_finite", 2),
                   make_cell({{"prefill", "batched"}, {"precision", "bf16"}}, Outcome::pass)});
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::conditional_go);
  ASSERT_EQ(b.workarounds.size(), 3u);
  EXPECT_EQ(b.workarounds[0].settings, (AxisValues{{"prefill", "batched"}, {"precision", "bf16"}}));
  EXPECT_EQ(b.workarounds[1].settings, (AxisValues{{"prefill", "batched"}}));
  EXPECT_EQ(b.workarounds[2].settings, (AxisValues{{"precision", "bf16"}}));
}

TEST(Decide, EverythingSkippedIsConditionalAndSaysNothingRan) {
  auto r = run_of({make_cell({{"device", "cuda"}}, Outcome::skip, "no_cuda")});
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::conditional_go);
  EXPECT_EQ(b.ran, 0);
  EXPECT_EQ(b.skipped, 1);
}

TEST(Decide, APassThatMissesAGateCountsAsAFailure) {
  auto c = make_cell({}, Outcome::pass);
  c.metrics.tok_s = 27.0;
  c.gates = testing::gates_from({{"min_tok_s", 300}});
  auto b = explain_decision(run_of({c}));
  EXPECT_EQ(b.decision, Decision::no_go);
  EXPECT_EQ(b.failing, std::vector<std::string>{"default"});
}

TEST(Decide, APassingCellThatMissesItsGateIsNoWorkaround) {
  auto slow = make_cell({{"prefill", "batched"}}, Outcome::pass);
  slow.metrics.tok_s = 27.0;
  slow.gates = testing::gates_from({{"min_tok_s", 300}});
  auto r = run_of({make_cell({{"prefill", "sequential"}}, Outcome::hang, "stall"), slow});
  EXPECT_EQ(decide(r), Decision::no_go);
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST(DecideWrongAnswer, ParityFailureOfOnePathIsNoGoEvenWhenTheOtherPathPasses) {
  RunResult r;
  r.cells = {testing::make_cell({{"prefill", "batched"}}, Outcome::fail, "parity", 1, "layer 0 / slc"),
             testing::make_cell({{"prefill", "sequential"}}, Outcome::pass)};
  auto b = explain_decision(r);
  EXPECT_EQ(b.decision, Decision::no_go);
  EXPECT_EQ(b.no_workaround, std::vector<std::string>{"prefill=batched"});
  EXPECT_TRUE(b.workarounds.empty());
}

TEST(DecideWrongAnswer, CausalityFailureOfOnePrecisionIsNoGo) {
  RunResult r;
  r.cells = {testing::make_cell({{"precision", "bf16"}}, Outcome::fail, "causality", 1),
             testing::make_cell({{"precision", "fp32"}}, Outcome::pass)};
  EXPECT_EQ(decide(r), Decision::no_go);
}

TEST(DecideWrongAnswer, AHangBypassedByAnotherPathStaysConditional) {
  RunResult r;
  r.cells = {testing::make_cell({{"prefill", "sequential"}}, Outcome::hang, "stall", 5),
             testing::make_cell({{"prefill", "batched"}}, Outcome::pass)};
  EXPECT_EQ(decide(r), Decision::conditional_go);
}

}  // namespace
}  // namespace harness
