// A world_size > 1 cell under the supervisor, with the helper child standing
// in for the ranks: every rank in its own directory, and when one rank dies
// the others' process groups are killed at once (long before their own
// deadlines), leaving no process behind.
#include "harness/supervisor/rank_group.h"

#include <signal.h>

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "harness/supervisor/classify.h"
#include "harness/supervisor/rank_port.h"
#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using testing::ScratchDir;
using testing::test_child;

CellSpec group_cell() {
  CellSpec c;
  c.id = "world_size=2";
  c.axes = {{"world_size", "2"}};
  c.train.steps = 4;
  c.train.world_size = 2;
  c.watchdog.stall_timeout_s = 30;  // far beyond the test: only the group kill can end the waiting rank
  c.watchdog.first_step_timeout_s = 60;
  c.watchdog.step_timeout_s = 60;
  return c;
}

// Rank r runs the helper in mode modes[r] (read from the rank's directory name).
ArgvBuilder rank_argv(std::vector<std::string> modes) {
  return [modes](const CellSpec&, const std::string& dir) {
    const int rank = dir.back() - '0';
    return std::vector<std::string>{test_child(), modes.at(static_cast<size_t>(rank)), dir};
  };
}

RunOptions group_options(const std::string& run_dir) {
  RunOptions o;
  o.run_dir = run_dir;
  o.supervisor.kill_grace_s = 1.0;
  o.supervisor.stacks.use_debugger = false;
  o.supervisor.stacks.stack_wait_s = 0.3;
  return o;
}

bool process_gone(int pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(RankGroup, OneDeadRankTakesTheOthersDownAtOnce) {
  ScratchDir tmp;
  const std::string dir = tmp.path() + "/cells/world_size=2";
  const auto t0 = std::chrono::steady_clock::now();
  SupervisedRun g = supervise_rank_group(group_cell(), rank_argv({"hang", "segv"}), group_options(tmp.path()), dir, 0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 15.0) << "the waiting rank was not stopped with the group";
  ASSERT_EQ(g.ranks.size(), 2u);
  EXPECT_TRUE(g.ranks[0].stopped_with_group);
  EXPECT_FALSE(g.ranks[1].stopped_with_group);
  EXPECT_EQ(g.ranks[1].term_signal, SIGSEGV);
  EXPECT_EQ(g.term_signal, SIGSEGV) << "the deciding run is the rank that died";
  EXPECT_NE(g.killed_by, KillReason::cancelled) << "a group kill is not the user's cancel";
  for (auto& r : g.ranks) {
    EXPECT_TRUE(r.group_empty);
    EXPECT_TRUE(process_gone(r.pid)) << r.pid;
  }
  // Rank 0 may be stopped before it writes a line: its directory and spec exist either way.
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank0/cell.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank1/events.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/cell.json"));

  CellResult r = classify(group_cell(), g);
  EXPECT_EQ(r.outcome, Outcome::crash);
  ASSERT_TRUE(r.distributed);
  EXPECT_EQ(r.distributed->world_size, 2);
  EXPECT_EQ(r.distributed->ranks[0].outcome, "stopped");
  EXPECT_EQ(r.distributed->ranks[1].outcome, "crash");
  EXPECT_EQ(r.findings.front().location.rfind("rank 1", 0), 0u) << r.findings.front().location;
}

TEST(RankGroup, PassingRanksPassTogether) {
  ScratchDir tmp;
  SupervisedRun g = supervise_rank_group(group_cell(), rank_argv({"pass", "pass"}), group_options(tmp.path()),
                                         tmp.path() + "/cells/c", 0);
  ASSERT_EQ(g.ranks.size(), 2u);
  for (auto& r : g.ranks) EXPECT_EQ(r.exit_code, 0);
  CellResult r = classify(group_cell(), g);
  EXPECT_EQ(r.outcome, Outcome::pass);
  EXPECT_EQ(r.steps_completed, 4);
}

TEST(RankPort, LeasesNeverCollide) {
  PortLease a, b, c;
  EXPECT_GT(a.port(), 0);
  EXPECT_NE(a.port(), b.port());
  EXPECT_NE(b.port(), c.port());
  EXPECT_NE(a.port(), c.port());
}

}  // namespace
}  // namespace harness::supervisor
