#include "harness/supervisor/watchdog.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using testing::gone_within;
using testing::read_file;
using testing::read_pids;
using testing::ScratchDir;
using testing::test_child;

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

void expect_group_gone(const SupervisedRun& run) {
  EXPECT_TRUE(run.group_empty);
  EXPECT_TRUE(kill(-run.pid, 0) != 0 && errno == ESRCH) << "process group " << run.pid << " still has members";
}

TEST(Watchdog, CleanRunExitsZeroWithAllEvents) {
  ScratchDir dir;
  std::vector<std::string> seen;
  Hooks hooks;
  hooks.on_event = [&](const nlohmann::json& e) { seen.push_back(e["ev"]); };
  SupervisedRun run = supervise(launch_mode("pass", dir.path()), fast_spec(), hooks, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::none);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.launch_error.empty());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "start");
  EXPECT_EQ(seen.back(), "done");
  EXPECT_EQ(seen.size(), run.events.size());
  EXPECT_EQ(run.malformed_lines, 0u);
  expect_group_gone(run);
}

TEST(Watchdog, SilentChildIsAStallDetectedPromptly) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisedRun run = supervise(launch_mode("hang", dir.path()), spec, {}, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_GE(run.since_last_event_s, 1.0);
  EXPECT_LT(run.wall_s, spec.stall_timeout_s + 5.0);
  EXPECT_EQ(run.step_in_progress, 1);
  expect_group_gone(run);
}

// A CPU-only child computing for 3 s without a word, under a 1 s stall
// deadline: with busy_is_progress it is slow, not stuck, and finishes.
TEST(Watchdog, BusySilentCpuChildIsNotAStall) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisorOptions opt = no_debugger();
  opt.busy_is_progress = true;
  SupervisedRun run = supervise(launch_mode("busy_silent", dir.path()), spec, {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::none);
  EXPECT_EQ(run.exit_code, 0);
  // The same child where busyness proves nothing (a GPU run may spin-wait): a stall.
  ScratchDir dir2;
  SupervisedRun gpu = supervise(launch_mode("busy_silent", dir2.path()), spec, {}, no_debugger());
  EXPECT_EQ(gpu.killed_by, KillReason::stall);
}

TEST(Watchdog, BusySilentChildStillMeetsTheStepDeadline) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 0.5;
  spec.step_timeout_s = 1.5;  // the child's step 1 never ends
  SupervisorOptions opt = no_debugger();
  opt.busy_is_progress = true;
  SupervisedRun run = supervise(launch_mode("busy_forever", dir.path()), spec, {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::step_timeout);
  EXPECT_GT(run.cpu_s_since_last_event, 0.5);
  expect_group_gone(run);
}

TEST(Watchdog, ProgressWithoutStepEndIsAStepTimeoutWithARate) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 2.0;  // progress every 50 ms keeps the stall deadline away
  spec.step_timeout_s = 1.5;
  SupervisedRun run = supervise(launch_mode("spin", dir.path()), spec, {}, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::step_timeout);
  EXPECT_EQ(run.step_in_progress, 1);
  EXPECT_GE(run.step_elapsed_s, 1.5);
  EXPECT_GT(run.step_events, 5);
  EXPECT_GT(run.progress_rate, 2.0);  // ~20/s written; generous for a loaded machine
  expect_group_gone(run);
}

TEST(Watchdog, FirstStepDeadline) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.first_step_timeout_s = 1.0;
  SupervisedRun run = supervise(launch_mode("spin_first", dir.path()), spec, {}, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::first_step_timeout);
  EXPECT_LT(run.wall_s, 6.0);
  expect_group_gone(run);
}

TEST(Watchdog, OverallWallCap) {
  ScratchDir dir;
  SupervisorOptions opt = no_debugger();
  opt.max_wall_s = 1.0;
  SupervisedRun run = supervise(launch_mode("spin", dir.path()), fast_spec(), {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::max_wall);
  expect_group_gone(run);
}

TEST(Watchdog, CancelHookKillsWithoutCollectingStacks) {
  ScratchDir dir;
  Hooks hooks;
  hooks.cancelled = [] { return true; };
  SupervisedRun run = supervise(launch_mode("hang", dir.path()), fast_spec(), hooks, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::cancelled);
  EXPECT_FALSE(run.stacks);
  expect_group_gone(run);
}

TEST(Watchdog, AsksTheChildForStacksBeforeKilling) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisedRun run = supervise(launch_mode("stacks", dir.path()), spec, {}, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::stall);
  ASSERT_TRUE(run.stacks);
  EXPECT_TRUE(run.stacks->signalled);
  EXPECT_TRUE(run.stacks->stacks_written);
  EXPECT_NE(read_file(dir.path() + "/stacks.txt").find("forward"), std::string::npos);
  expect_group_gone(run);
}

TEST(Watchdog, DebuggerStacksWithTheirOwnDeadline) {
  if (find_debugger().empty()) GTEST_SKIP() << "no gdb or cuda-gdb on PATH";
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisorOptions opt = no_debugger();
  opt.stacks.use_debugger = true;
  opt.stacks.debugger_timeout_s = 10.0;
  SupervisedRun run = supervise(launch_mode("stacks", dir.path()), spec, {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::stall);
  ASSERT_TRUE(run.stacks);
  EXPECT_FALSE(run.stacks->debugger.empty());
  EXPECT_FALSE(run.stacks->debugger_status.empty());
  EXPECT_LE(run.stacks->seconds, opt.stacks.stack_wait_s + opt.stacks.debugger_timeout_s + 3.0);
  // Whether ptrace is allowed depends on the machine; the output file is always there.
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/gdb_stacks.txt"));
  expect_group_gone(run);
}

TEST(Watchdog, HungChildsGrandchildrenDieWithIt) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisedRun run = supervise(launch_mode("fork_hang", dir.path()), spec, {}, no_debugger());
  EXPECT_EQ(run.killed_by, KillReason::stall);
  auto grandchildren = read_pids(dir.path() + "/grandchildren.txt");
  ASSERT_EQ(grandchildren.size(), 2u);
  for (pid_t g : grandchildren) EXPECT_TRUE(gone_within(g, 0.5)) << "grandchild " << g;
  expect_group_gone(run);
}

TEST(Watchdog, StragglersOfACleanExitAreKilled) {
  ScratchDir dir;
  SupervisedRun run = supervise(launch_mode("pass_leaves_grandchild", dir.path()), fast_spec(), {}, no_debugger());
  EXPECT_EQ(run.exit_code, 0);
  auto grandchildren = read_pids(dir.path() + "/grandchildren.txt");
  ASSERT_EQ(grandchildren.size(), 1u);
  EXPECT_TRUE(gone_within(grandchildren[0], 0.5));
  expect_group_gone(run);
}

TEST(Watchdog, SigtermIgnoredStillEndsBySigkill) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 1.0;
  SupervisorOptions opt = no_debugger();
  opt.kill_grace_s = 0.3;
  SupervisedRun run = supervise(launch_mode("ignore_term", dir.path()), spec, {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_EQ(run.term_signal, SIGKILL);
  expect_group_gone(run);
}

TEST(Watchdog, LaunchFailureIsRecordedNotThrown) {
  ScratchDir dir;
  ChildLaunch l;
  l.argv = {dir.path() + "/no-such-binary"};
  l.cell_dir = dir.path();
  SupervisedRun run = supervise(l, fast_spec(), {}, no_debugger());
  EXPECT_NE(run.launch_error.find("no-such-binary"), std::string::npos) << run.launch_error;
  EXPECT_FALSE(run.exit_code);
}

}  // namespace
}  // namespace harness::supervisor

namespace harness::supervisor {
namespace {

// A deadlock whose step deadline comes before its stall deadline (a step that
// was already long when it blocked) is still a hang: the step deadline is for
// a child that keeps moving, and this one has stopped.
TEST(Watchdog, AQuietChildPastItsStepDeadlineIsAStallNotAStepTimeout) {
  ScratchDir dir;
  WatchdogSpec spec = fast_spec();
  spec.stall_timeout_s = 4.0;
  spec.step_timeout_s = 1.0;
  SupervisorOptions opt = no_debugger();
  opt.busy_is_progress = true;  // a CPU child: its flat CPU time says it is blocked
  SupervisedRun run = supervise(launch_mode("hang", dir.path()), spec, {}, opt);
  EXPECT_EQ(run.killed_by, KillReason::stall);
  EXPECT_EQ(run.step_in_progress, 1);
  EXPECT_GE(run.since_last_progress_s, 4.0);
  EXPECT_GE(run.cpu_s_since_last_event, 0.0);
  EXPECT_LT(run.cpu_s_since_last_event, 0.5);
  expect_group_gone(run);
}

}  // namespace
}  // namespace harness::supervisor
