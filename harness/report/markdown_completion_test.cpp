// An incomplete run reads as one at a glance: a banner first, "no verdict" on
// the decision line, the cells not run listed apart from the matrix; and
// results.json keeps how the run ended through a re-render.
#include "harness/report/markdown_completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/report/markdown_report.h"

namespace harness {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

RunResult cancelled_run() {
  RunResult r;
  r.scenario = {{"name", "s"}};
  r.command_line = "nsa-harness run s.yaml --out runs/x";
  CellResult done;
  done.id = "a";
  r.cells.push_back(done);
  r.completion.end = RunEnd::cancelled;
  r.completion.signal = "SIGINT";
  r.completion.not_run = {"b", "c"};
  return r;
}

TEST(MarkdownCompletion, CancelledRunSaysSoFirstAndGivesNoVerdict) {
  const std::string md = render_markdown(cancelled_run());
  const size_t banner = md.find("> **RUN CANCELLED** by SIGINT — 2 cell(s) not run");
  ASSERT_NE(banner, std::string::npos) << md;
  EXPECT_LT(banner, md.find("**Date**"));
  EXPECT_THAT(md, HasSubstr("`nsa-harness run s.yaml --out runs/x --resume`"));
  EXPECT_THAT(md, HasSubstr("**Decision**: **no verdict** — run cancelled (1 of 3 cells finished"));
  EXPECT_THAT(md, HasSubstr("## Not Run\n"));
  EXPECT_THAT(md, HasSubstr("- `b`\n- `c`\n"));
  EXPECT_THAT(md, Not(HasSubstr("**Decision**: **GO**")));
}

TEST(MarkdownCompletion, HarnessFailureIsNoFinding) {
  RunResult r = cancelled_run();
  r.completion.end = RunEnd::harness_failure;
  r.completion.signal.clear();
  r.completion.harness_failure = "cannot write x/result.json.tmp: No space left on device";
  const std::string md = render_markdown(r);
  EXPECT_THAT(md, HasSubstr("> **HARNESS FAILURE** — cannot write x/result.json.tmp: No space left on device."));
  EXPECT_THAT(md, HasSubstr("**Decision**: **no verdict** — the harness failed"));
}

TEST(MarkdownCompletion, CompleteRunHasNoBannerButNotesWhatResumeReRan) {
  RunResult r;
  EXPECT_EQ(completion_banner(r), "");
  r.completion.reused = 3;
  r.completion.rerun_changed = {"x"};
  EXPECT_EQ(completion_banner(r), "> Resumed: 3 earlier result(s) reused; re-run because their spec changed since: `x`.\n");
}

TEST(ResultsJson, CompletionSurvivesARoundTrip) {
  RunResult r = cancelled_run();
  r.completion.rerun_changed = {"a"};
  r.completion.reused = 2;
  r.cells[0].spec_hash = "0123456789abcdef";
  nlohmann::json j = r;
  EXPECT_EQ(j["cancelled"], true);
  EXPECT_EQ(j["run_status"], "cancelled");
  RunResult back = j.get<RunResult>();
  EXPECT_EQ(back.completion.end, RunEnd::cancelled);
  EXPECT_EQ(back.completion.signal, "SIGINT");
  EXPECT_EQ(back.completion.not_run, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(back.completion.reused, 2);
  EXPECT_EQ(back.completion.rerun_changed, std::vector<std::string>{"a"});
  EXPECT_EQ(back.cells[0].spec_hash, "0123456789abcdef");
  // results.json from before these fields: a complete run.
  j.erase("run_status");
  j.erase("not_run");
  EXPECT_EQ(j.get<RunResult>().completion.end, RunEnd::complete);
}

}  // namespace
}  // namespace harness
