#include "harness/analysis/next_actions.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;
using ::testing::Contains;
using ::testing::HasSubstr;

TEST(NextActions, NonFiniteNamesTheFirstNonFiniteOp) {
  RunResult r;
  r.cells = {make_cell({}, Outcome::fail, "non_finite", 2, "layer 1 / slc / softmax")};
  auto a = next_actions(r);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], "[non_finite] `default`: " + std::string(action_for("non_finite")) +
                      " (at layer 1 / slc / softmax, step 2).");
  EXPECT_THAT(a[0], HasSubstr("fp32"));
}

TEST(NextActions, AdamWUnderflowAsksForMasterWeights) {
  RunResult r;
  auto c = make_cell({}, Outcome::pass);
  c.findings.push_back(testing::warning("adamw_eps_underflow", "eps underflow"));
  r.cells = {c};
  auto a = next_actions(r);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_THAT(a[0], HasSubstr("master_weights: true"));
}

TEST(NextActions, AConsistentFlipBecomesAWorkaroundLine) {
  RunResult r;
  r.cells = {make_cell({{"prefill", "sequential"}}, Outcome::slow_step, "slow_host_syncs", 5, "phase forward/prefill"),
             make_cell({{"prefill", "batched"}}, Outcome::pass)};
  auto a = next_actions(r);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_THAT(a[0], HasSubstr("remove the per-token host syncs"));
  EXPECT_THAT(a[1], HasSubstr("Until fixed, run with prefill=batched (NSA_PREFILL_BATCHED=1)"));
}

TEST(NextActions, NoWorkaroundLineForAWorkloadAxis) {
  RunResult r;
  r.cells = {make_cell({{"seq_len", "128"}}, Outcome::pass),
             make_cell({{"seq_len", "512"}}, Outcome::crash, "cuda_illegal_address", 1)};
  for (auto& line : next_actions(r)) EXPECT_EQ(line.find("Until fixed"), std::string::npos) << line;
}

TEST(NextActions, EveryReasonCodeHasItsOwnAction) {
  for (const char* code : {"stall", "step_timeout", "slow_host_syncs", "cuda_illegal_address", "autograd_inplace",
                           "non_finite", "parity", "causality", "dead_params", "gates_constant", "no_cuda"})
    EXPECT_NE(action_for(code), action_for("no_such_code")) << code;
}

// One table holds every code: each row has its meaning and advice, codes are
// unique, and the named constants are the table's own strings.
TEST(ReasonTable, EveryRowIsCompleteAndUnique) {
  std::set<std::string_view> seen;
  for (const ReasonInfo& r : reason_table()) {
    SCOPED_TRACE(std::string(r.code));
    EXPECT_TRUE(seen.insert(r.code).second);
    EXPECT_FALSE(r.meaning.empty());
    EXPECT_EQ(action_for(r.code), r.advice);
    EXPECT_NE(r.decides, Outcome::pass);  // a pass has no reason
  }
  EXPECT_EQ(find_reason(reason::stall)->decides, Outcome::hang);
  EXPECT_EQ(find_reason(reason::gates_constant)->decides, std::nullopt);  // a warning
  EXPECT_EQ(find_reason(reason::no_cuda)->decides, Outcome::skip);
  EXPECT_EQ(find_reason("no_such_code"), nullptr);
}

}  // namespace
}  // namespace harness
