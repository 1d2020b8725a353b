#include "harness/supervisor/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using namespace testing;  // the helper child, scratch dirs, pid files (harness/testing/child_helpers.h)

TEST(ChildProcess, RunsInItsOwnProcessGroupWithOutputInTheLog) {
  ScratchDir dir;
  ChildLaunch l;
  l.argv = {"sh", "-c", "echo out; echo err >&2; ps -o pgid= -p $$"};
  l.output_path = dir.path() + "/stderr.log";
  ChildProcess c = ChildProcess::spawn(l);
  auto st = c.wait_for(10);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->exit_code, 0);
  c.kill_group(1);
  std::string log = read_file(l.output_path);
  EXPECT_NE(log.find("out"), std::string::npos);
  EXPECT_NE(log.find("err"), std::string::npos);
  EXPECT_NE(log.find(std::to_string(c.pid())), std::string::npos) << "pgid must equal the child's pid: " << log;
  EXPECT_NE(c.pgid(), getpgrp());
}

TEST(ChildProcess, PassesExtraEnvironmentAndStdinIsDevNull) {
  ScratchDir dir;
  ChildLaunch l;
  l.argv = {"sh", "-c", "echo value=$SUPERVISOR_X; cat; echo end"};
  l.env = {{"SUPERVISOR_X", "42"}};
  l.output_path = dir.path() + "/log";
  ChildProcess c = ChildProcess::spawn(l);
  auto st = c.wait_for(10);  // `cat` returns at once on /dev/null
  ASSERT_TRUE(st);
  c.kill_group(1);
  EXPECT_EQ(read_file(l.output_path), "value=42\nend\n");
}

TEST(ChildProcess, DoesNotLeakHarnessDescriptors) {
  ScratchDir dir;
  int raw = open((dir.path() + "/secret").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(raw, 0);
  int fd = fcntl(raw, F_DUPFD, 50);  // no close-on-exec on purpose, at a number `ls` will not use
  close(raw);
  ASSERT_GE(fd, 50);
  ChildLaunch l;
  l.argv = {"sh", "-c", "ls /proc/self/fd"};
  l.output_path = dir.path() + "/log";
  ChildProcess c = ChildProcess::spawn(l);
  ASSERT_TRUE(c.wait_for(10));
  c.kill_group(1);
  close(fd);
  EXPECT_EQ(read_file(l.output_path).find(std::to_string(fd) + "\n"), std::string::npos)
      << read_file(l.output_path);
}

TEST(ChildProcess, MissingProgramThrowsWithItsName) {
  ChildLaunch l;
  l.argv = {"/nonexistent/program-xyz"};
  try {
    ChildProcess::spawn(l);
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/program-xyz"), std::string::npos) << e.what();
  }
}

TEST(ChildProcess, ReportsExitCodeAndSignal) {
  ChildLaunch l;
  l.argv = {"sh", "-c", "exit 7"};
  ChildProcess a = ChildProcess::spawn(l);
  auto st = a.wait_for(10);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->exit_code, 7);
  a.kill_group(1);
  l.argv = {"sh", "-c", "kill -SEGV $$"};
  ChildProcess b = ChildProcess::spawn(l);
  st = b.wait_for(10);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->term_signal, SIGSEGV);
  EXPECT_EQ(describe(*st), "killed by SIGSEGV");
  b.kill_group(1);
}

TEST(ChildProcess, KillGroupTakesGrandchildrenWithIt) {
  ScratchDir dir;
  ChildLaunch l;
  l.argv = {test_child(), "fork_hang", dir.path()};
  l.output_path = dir.path() + "/log";
  ChildProcess c = ChildProcess::spawn(l);
  // Wait (with a deadline) for the child to have forked.
  std::vector<pid_t> grandchildren;
  for (int i = 0; i < 500 && grandchildren.size() < 2; ++i) {
    usleep(10 * 1000);
    grandchildren = read_pids(dir.path() + "/grandchildren.txt");
  }
  ASSERT_EQ(grandchildren.size(), 2u);
  ExitStatus st = c.kill_group(1.0);
  EXPECT_EQ(st.term_signal, SIGTERM);
  EXPECT_TRUE(c.group_empty());
  EXPECT_TRUE(kill(-c.pgid(), 0) != 0 && errno == ESRCH);
  for (pid_t g : grandchildren) EXPECT_TRUE(gone_within(g, 2.0)) << "grandchild " << g;
}

TEST(ChildProcess, SigkillAfterGraceWhenSigtermIsIgnored) {
  ScratchDir dir;
  ChildLaunch l;
  l.argv = {test_child(), "ignore_term", dir.path()};
  ChildProcess c = ChildProcess::spawn(l);
  usleep(200 * 1000);  // let it install SIG_IGN; if it has not yet, SIGTERM kills it, also fine below
  ExitStatus st = c.kill_group(0.3);
  ASSERT_TRUE(st.term_signal);
  EXPECT_TRUE(*st.term_signal == SIGKILL || *st.term_signal == SIGTERM);
  EXPECT_TRUE(c.group_empty());
}

TEST(ChildProcess, DestructorLeavesNothingBehind) {
  ScratchDir dir;
  pid_t pid;
  {
    ChildLaunch l;
    l.argv = {"sleep", "1000"};
    ChildProcess c = ChildProcess::spawn(l);
    pid = c.pid();
  }
  EXPECT_TRUE(gone_within(pid, 0.1));
}

// The harness dying must take the child with it (PR_SET_PDEATHSIG).
TEST(ChildProcess, ChildDiesWithTheHarness) {
  // The orphan is re-parented to us, not to an init that may never reap it,
  // so "gone" can be checked without counting a zombie as alive.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t harness = fork();
  if (harness == 0) {
    close(fds[0]);
    ChildLaunch l;
    l.argv = {"sleep", "1000"};
    ChildProcess c = ChildProcess::spawn(l);
    pid_t p = c.pid();
    (void)!write(fds[1], &p, sizeof p);
    _exit(0);  // no destructors: the harness "crashes"
  }
  close(fds[1]);
  pid_t child = -1;
  ASSERT_EQ(read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  close(fds[0]);
  waitpid(harness, nullptr, 0);
  EXPECT_TRUE(gone_within(child, 5.0)) << "child " << child << " outlived its harness";
}

TEST(FindOnPath, FindsShellAndRejectsMissing) {
  EXPECT_TRUE(find_on_path("sh"));
  EXPECT_FALSE(find_on_path("no-such-program-xyz"));
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
}

}  // namespace
}  // namespace harness::supervisor
