#include "harness/supervisor/watchdog.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using namespace testing;  // the helper child, scratch dirs, pid files (harness/testing/child_helpers.h)

ChildLaunch launch_mode(const std::string& mode, const std::string& dir) {
  ChildLaunch l;
  l.argv = {test_child(), mode, dir};
  l.output_path = dir + "/stderr.log";
  l.cell_dir = dir;
  return l;
}

// Short deadlines keep the suite fast; each test shortens the one it exercises.
WatchdogSpec fast_spec() {
  WatchdogSpec s;
  s.stall_timeout_s = 10;
  s.first_step_timeout_s = 10;
  s.step_timeout_s = 10;
  return s;
}

SupervisorOptions no_debugger() {
  SupervisorOptions o;
  o.kill_grace_s = 1.0;
  o.stacks.use_debugger = false;
  o.stacks.stack_wait_s = 0.5;
  return o;
}

// Each test runs the helper child in one mode under the deadlines it shortens;
// whatever ended the child, its whole process group must be gone after.
class Watchdog : public ::testing::Test {
 protected:
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  SupervisorOptions opt = no_debugger();

  SupervisedRun run_mode(const std::string& mode, const Hooks& hooks = {}, const std::string& sub = "") {
    SupervisedRun run = supervise(launch_mode(mode, sub.empty() ? dir.path() : dir.sub(sub)), spec, hooks, opt);
    EXPECT_TRUE(run.group_empty);
    EXPECT_TRUE(kill(-run.pid, 0) != 0 && errno == ESRCH) << "process group " << run.pid << " still has members";
    return run;
  }
};

TEST_F(Watchdog, CleanRunExitsZeroWithAllEvents) {
  std::vector<std::string> seen;
  Hooks hooks;
  hooks.on_event = [&](const nlohmann::json& e) { seen.push_back(e["ev"]); };
  SupervisedRun run = run_mode("pass", hooks);
  EXPECT_EQ(run.killed_by, KillReason::none);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.launch_error.empty());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "start");
  EXPECT_EQ(seen.back(), "done");
  EXPECT_EQ(seen.size(), run.events.size());
  EXPECT_EQ(run.malformed_lines, 0u);
}

TEST_F(Watchdog, SilentChildIsAStallDetectedPromptly) {
  spec.stall_timeout_s = 1.0;
  SupervisedRun run = run_mode("hang");
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_GE(run.since_last_event_s, 1.0);
  EXPECT_LT(run.wall_s, spec.stall_timeout_s + 5.0);
  EXPECT_EQ(run.step_in_progress, 1);
}

// A CPU-only child computing for 3 s without a word, under a 1 s stall
// deadline: with busy_is_progress it is slow, not stuck, and finishes.
TEST_F(Watchdog, BusySilentCpuChildIsNotAStall) {
  spec.stall_timeout_s = 1.0;
  opt.busy_is_progress = true;
  SupervisedRun run = run_mode("busy_silent");
  EXPECT_EQ(run.killed_by, KillReason::none);
  EXPECT_EQ(run.exit_code, 0);
  // The same child where busyness proves nothing (a GPU run may spin-wait): a stall.
  opt.busy_is_progress = false;
  EXPECT_EQ(run_mode("busy_silent", {}, "gpu").killed_by, KillReason::stall);
}

TEST_F(Watchdog, BusySilentChildStillMeetsTheStepDeadline) {
  spec.stall_timeout_s = 0.5;
  spec.step_timeout_s = 1.5;  // the child's step 1 never ends
  opt.busy_is_progress = true;
  SupervisedRun run = run_mode("busy_forever");
  EXPECT_EQ(run.killed_by, KillReason::step_timeout);
  EXPECT_GT(run.cpu_s_since_last_event, 0.5);
}

TEST_F(Watchdog, ProgressWithoutStepEndIsAStepTimeoutWithARate) {
  spec.stall_timeout_s = 2.0;  // progress every 50 ms keeps the stall deadline away
  spec.step_timeout_s = 1.5;
  SupervisedRun run = run_mode("spin");
  EXPECT_EQ(run.killed_by, KillReason::step_timeout);
  EXPECT_EQ(run.step_in_progress, 1);
  EXPECT_GE(run.step_elapsed_s, 1.5);
  EXPECT_GT(run.step_events, 5);
  EXPECT_GT(run.progress_rate, 2.0);  // ~20/s written; generous for a loaded machine
}

TEST_F(Watchdog, FirstStepDeadline) {
  spec.first_step_timeout_s = 1.0;
  SupervisedRun run = run_mode("spin_first");
  EXPECT_EQ(run.killed_by, KillReason::first_step_timeout);
  EXPECT_LT(run.wall_s, 6.0);
}

TEST_F(Watchdog, OverallWallCap) {
  opt.max_wall_s = 1.0;
  EXPECT_EQ(run_mode("spin").killed_by, KillReason::max_wall);
}

TEST_F(Watchdog, CancelHookKillsWithoutCollectingStacks) {
  Hooks hooks;
  hooks.cancelled = [] { return true; };
  SupervisedRun run = run_mode("hang", hooks);
  EXPECT_EQ(run.killed_by, KillReason::cancelled);
  EXPECT_FALSE(run.stacks);
}

TEST_F(Watchdog, AsksTheChildForStacksBeforeKilling) {
  spec.stall_timeout_s = 1.0;
  SupervisedRun run = run_mode("stacks");
  EXPECT_EQ(run.killed_by, KillReason::stall);
  ASSERT_TRUE(run.stacks);
  EXPECT_TRUE(run.stacks->signalled);
  EXPECT_TRUE(run.stacks->stacks_written);
  EXPECT_NE(read_file(dir.path() + "/stacks.txt").find("forward"), std::string::npos);
}

TEST_F(Watchdog, DebuggerStacksWithTheirOwnDeadline) {
  if (find_debugger().empty()) GTEST_SKIP() << "no gdb or cuda-gdb on PATH";
  spec.stall_timeout_s = 1.0;
  opt.stacks.use_debugger = true;
  opt.stacks.debugger_timeout_s = 10.0;
  SupervisedRun run = run_mode("stacks");
  EXPECT_EQ(run.killed_by, KillReason::stall);
  ASSERT_TRUE(run.stacks);
  EXPECT_FALSE(run.stacks->debugger.empty());
  EXPECT_FALSE(run.stacks->debugger_status.empty());
  EXPECT_LE(run.stacks->seconds, opt.stacks.stack_wait_s + opt.stacks.debugger_timeout_s + 3.0);
  // Whether ptrace is allowed depends on the machine; the output file is always there.
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/gdb_stacks.txt"));
}

TEST_F(Watchdog, HungChildsGrandchildrenDieWithIt) {
  spec.stall_timeout_s = 1.0;
  EXPECT_EQ(run_mode("fork_hang").killed_by, KillReason::stall);
  auto grandchildren = read_pids(dir.path() + "/grandchildren.txt");
  ASSERT_EQ(grandchildren.size(), 2u);
  for (pid_t g : grandchildren) EXPECT_TRUE(gone_within(g, 0.5)) << "grandchild " << g;
}

TEST_F(Watchdog, StragglersOfACleanExitAreKilled) {
  EXPECT_EQ(run_mode("pass_leaves_grandchild").exit_code, 0);
  auto grandchildren = read_pids(dir.path() + "/grandchildren.txt");
  ASSERT_EQ(grandchildren.size(), 1u);
  EXPECT_TRUE(gone_within(grandchildren[0], 0.5));
}

TEST_F(Watchdog, SigtermIgnoredStillEndsBySigkill) {
  spec.stall_timeout_s = 1.0;
  opt.kill_grace_s = 0.3;
  SupervisedRun run = run_mode("ignore_term");
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_EQ(run.term_signal, SIGKILL);
}

TEST_F(Watchdog, LaunchFailureIsRecordedNotThrown) {
  ChildLaunch l;
  l.argv = {dir.path() + "/no-such-binary"};
  l.cell_dir = dir.path();
  SupervisedRun run = supervise(l, spec, {}, opt);
  EXPECT_NE(run.launch_error.find("no-such-binary"), std::string::npos) << run.launch_error;
  EXPECT_FALSE(run.exit_code);
}

// A deadlock whose step deadline comes before its stall deadline (a step that
// was already long when it blocked) is still a hang: the step deadline is for
// a child that keeps moving, and this one has stopped.
TEST_F(Watchdog, AQuietChildPastItsStepDeadlineIsAStallNotAStepTimeout) {
  spec.stall_timeout_s = 4.0;
  spec.step_timeout_s = 1.0;
  opt.busy_is_progress = true;  // a CPU child: its flat CPU time says it is blocked
  SupervisedRun run = run_mode("hang");
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_EQ(run.step_in_progress, 1);
  EXPECT_GE(run.since_last_progress_s, 4.0);
  EXPECT_GE(run.cpu_s_since_last_event, 0.0);
  EXPECT_LT(run.cpu_s_since_last_event, 0.5);
}

}  // namespace
}  // namespace harness::supervisor
