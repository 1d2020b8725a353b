#include "harness/supervisor/progress_view.h"

#include <gtest/gtest.h>

#include <sstream>

#include "harness/supervisor/run_progress.h"

namespace harness::supervisor {
namespace {

ProgressRecord two_of_six_done() {
  ProgressRecord p;
  p.total = 6;
  p.finished = 2;
  p.failed = 1;
  p.jobs = 2;
  p.by_outcome = {{"pass", 1}, {"hang", 1}};
  p.durations_s = {10.0, 30.0};  // mean 20 s
  p.running = {{"prefill=batched", 3, 6, 5.0}, {"prefill=sequential,precision=bf16", 0, 6, 25.0}};
  p.last = "prefill=sequential → hang (stall) (30.0 s)";
  return p;
}

TEST(ProgressView, EtaIsTheMeanFinishedCellTimesTheWorkLeftOverTheSlots) {
  // 2 waiting × 20 s + (20 − 5) s + max(0, 20 − 25) s = 55 s of work over 2 slots.
  EXPECT_DOUBLE_EQ(*eta_s(two_of_six_done()), 27.5);
  ProgressRecord none = two_of_six_done();
  none.durations_s.clear();  // only resumed cells so far: no measured duration, no guess
  EXPECT_FALSE(eta_s(none).has_value());
}

TEST(ProgressView, TheLiveBlockShowsCountsEtaAndEachRunningCellsStep) {
  EXPECT_EQ(render_live(two_of_six_done(), false),
            "[2/6] ✓ 1 pass · ✗ 1 failed · 2 running · ETA 28s\n"
            "  ▶ prefill=batched                    step 3/6    5s\n"
            "  ▶ prefill=sequential,precision=bf16  step 0/6    25s\n"
            "last: prefill=sequential → hang (stall) (30.0 s)\n");
  const std::string colored = render_live(two_of_six_done(), true);
  EXPECT_NE(colored.find("\033[32m✓ 1 pass\033[0m"), std::string::npos) << colored;
  EXPECT_NE(colored.find("\033[31m✗ 1 failed\033[0m"), std::string::npos) << colored;
}

TEST(ProgressView, DurationsReadAsMinutesAndHours) {
  EXPECT_EQ(duration_text(0.4), "0s");
  EXPECT_EQ(duration_text(80), "1m20s");
  EXPECT_EQ(duration_text(7380), "2h03m");
}

TEST(ProgressView, LiveOnlyOnATerminalOutsideCiAndWithoutNoColor) {
  EXPECT_TRUE(wants_live_view(true, nullptr, nullptr));
  EXPECT_TRUE(wants_live_view(true, "", ""));  // set but empty counts as unset (no-color.org)
  EXPECT_FALSE(wants_live_view(false, nullptr, nullptr));
  EXPECT_FALSE(wants_live_view(true, "true", nullptr));
  EXPECT_FALSE(wants_live_view(true, nullptr, "1"));
}

TEST(ProgressView, TheSummaryTableHasARowPerCellAndEndsWithTheDecision) {
  RunResult run;
  CellResult a, b;
  a.id = "x=1";
  a.steps_completed = a.steps_planned = 6;
  a.wall_s = 4.25;
  b.id = "x=22";
  b.outcome = Outcome::hang;
  b.reason = "stall";
  b.steps_completed = 4;
  b.steps_planned = 6;
  b.wall_s = 30;
  run.cells = {a, b};
  run.decision = Decision::conditional_go;
  EXPECT_EQ(render_summary_table(run),
            "Cell  Outcome                         Steps    Wall s\n"
            "x=1   pass                              6/6       4.2\n"
            "x=22  hang (stall)                      4/6      30.0\n"
            "Decision: CONDITIONAL GO\n");
}

// A cancelled run has no decision, whatever the cells it finished say.
TEST(ProgressView, ACancelledRunsSummaryHasNoDecision) {
  RunResult run;
  CellResult a;
  a.id = "x=1";
  run.cells = {a};
  run.decision = Decision::go;
  run.completion.end = RunEnd::cancelled;
  run.completion.not_run = {"x=2"};
  const std::string table = render_summary_table(run);
  EXPECT_NE(table.find("x=2   not run"), std::string::npos) << table;
  EXPECT_NE(table.find("Decision: none (cancelled)\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("Decision: GO"), std::string::npos) << table;
}

TEST(RunProgress, PlainModeWritesOneLinePerCellAndNoStepNoise) {
  std::ostringstream out;
  RunProgress progress(&out, false, 2);
  progress.started("x=1", 6);
  progress.step("x=1", 1);
  progress.step("x=1", 2);
  CellResult r;
  r.id = "x=1";
  r.wall_s = 1.5;
  progress.finished(r);
  progress.done();
  EXPECT_EQ(out.str(), "[1/2] x=1: pass 1.5 s\n");
}

TEST(RunProgress, TheRecordFollowsStepsAndFinishedCells) {
  RunProgress progress(nullptr, true, 3, 2);
  progress.started("a", 8);
  progress.started("b", 8);
  progress.step("a", 2);
  progress.step("a", 1);  // late or repeated events never move a cell back
  ProgressRecord p = progress.record();
  ASSERT_EQ(p.running.size(), 2u);
  EXPECT_EQ(p.running[0].id, "a");
  EXPECT_EQ(p.running[0].step, 2);
  EXPECT_EQ(p.running[0].steps_planned, 8);
  CellResult r;
  r.id = "b";
  r.outcome = Outcome::crash;
  r.wall_s = 3;
  progress.finished(r);
  p = progress.record();
  EXPECT_EQ(p.finished, 1);
  EXPECT_EQ(p.failed, 1);
  EXPECT_EQ(p.running.size(), 1u);
  EXPECT_EQ(p.durations_s, std::vector<double>{3.0});
}

TEST(RunProgress, LiveModeRedrawsTheBlockInPlace) {
  std::ostringstream out;
  RunProgress progress(&out, true, 1);
  progress.started("a", 2);
  progress.step("a", 1);
  const std::string s = out.str();
  // The second draw moves up over the first block's lines and clears below.
  EXPECT_NE(s.find("\033[3F\033[J"), std::string::npos) << s;
  EXPECT_NE(s.find("▶ a  step 1/2"), std::string::npos) << s;
}

}  // namespace
}  // namespace harness::supervisor
