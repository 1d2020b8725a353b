#include "harness/analysis/summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;
using ::testing::HasSubstr;
using ::testing::Not;

RunResult prefill_run() {
  RunResult r;
  r.scenario = {{"name", "prefill_hang"}};
  auto seq = make_cell({{"prefill", "sequential"}}, Outcome::hang, "stall", 5, "phase forward/layer 0");
  seq.findings[0].title = "no event for 30 s during sequential prefill";
  r.cells = {seq, make_cell({{"prefill", "batched"}}, Outcome::pass),
             make_cell({{"prefill", "batched"}, {"device", "cuda"}}, Outcome::skip, "no_cuda")};
  return r;
}

// The prefill run's summary, sentence by sentence: what each one must say.
TEST(ExecutiveSummary, PrefillRunSaysEachSentence) {
  const std::string summary = executive_summary(prefill_run());
  const char* sentences[] = {
      // cells counted by outcome
      "Ran 2 of 3 cells of scenario `prefill_hang`: 1 pass, 1 hang; 1 skipped (no_cuda).",
      // the deciding finding, with its step and location
      "Hang (stall) in 1 cell (`prefill=sequential`): no event for 30 s during sequential prefill (step 5, phase "
      "forward/layer 0).",
      // the attribution, quoted
      "What decides it: prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the hang (stall) at step 5",
      // what the decision rests on
      "Decision CONDITIONAL GO: every failing cell passes under other settings — `prefill=sequential` with "
      "prefill=batched (NSA_PREFILL_BATCHED=1).",
  };
  for (const char* want : sentences) EXPECT_THAT(summary, HasSubstr(want));
}

TEST(ExecutiveSummary, DoesNotRepeatAStepTheTitleAlreadyNames) {
  RunResult r;
  auto c = make_cell({}, Outcome::fail, "non_finite", 2, "layer 1 / slc / softmax");
  c.findings[0].title = "non-finite loss at step 2";
  r.cells = {c};
  EXPECT_THAT(executive_summary(r), HasSubstr("(`default`): non-finite loss at step 2 (layer 1 / slc / softmax)."));
}

TEST(ExecutiveSummary, CleanRunHasNoFailureOrWarningSentences) {
  RunResult r;
  r.cells = {make_cell({}, Outcome::pass)};
  EXPECT_EQ(executive_summary(r),
            "Ran 1 of 1 cell: 1 pass.\n\n"
            "Decision GO: every cell that ran passed, met its acceptance gates and raised no warning.");
}

TEST(ExecutiveSummary, AllSkippedSaysNothingWasVerified) {
  RunResult r;
  r.cells = {make_cell({{"device", "cuda"}}, Outcome::skip, "no_cuda")};
  EXPECT_THAT(executive_summary(r), HasSubstr("no cell ran (1 skipped), so nothing was verified"));
}

TEST(ExecutiveSummary, ListsWarnings) {
  RunResult r;
  auto c = make_cell({{"precision", "fp16"}}, Outcome::pass);
  c.findings.push_back(testing::warning("adamw_eps_underflow", "AdamW eps 1e-8 rounds to 0 in fp16"));
  r.cells = {c};
  auto s = executive_summary(r);
  EXPECT_THAT(s, HasSubstr("Warnings: adamw_eps_underflow in 1 cell (`precision=fp16`): AdamW eps 1e-8 rounds to 0 "
                           "in fp16."));
  EXPECT_THAT(s, HasSubstr("Decision CONDITIONAL GO: every cell that ran passed, but warnings fired"));
  EXPECT_THAT(s, Not(HasSubstr("What decides it")));
}

TEST(ExecutiveSummary, NoGoNamesTheCellsWithoutWorkaround) {
  RunResult r;
  r.cells = {make_cell({{"seq_len", "128"}}, Outcome::pass),
             make_cell({{"seq_len", "512"}}, Outcome::fail, "non_finite", 2)};
  EXPECT_THAT(executive_summary(r), HasSubstr("Decision NO-GO: 1 cell failed with no passing cell that runs the same "
                                              "workload under other settings (`seq_len=512`)."));
}

TEST(CellList, ShortensLongLists) {
  EXPECT_EQ(cell_list({"a"}), "`a`");
  EXPECT_EQ(cell_list({"a", "b"}), "`a` and `b`");
  EXPECT_EQ(cell_list({"a", "b", "c"}, 2), "`a`, `b` and 1 more");
}

}  // namespace
}  // namespace harness
