#include "harness/run/run_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/core/atomic_file.h"
#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using ::testing::HasSubstr;
using harness::testing::TempDir;

TEST(RunLock, RecordsTheHolder) {
  harness::testing::TempDir dir;
  RunLock lock = RunLock::acquire(dir.str(), "2025-01-02T03:04:05Z");
  LockHolder h = parse_lock_holder(read_file(dir.str() + "/" + kLockFile));
  EXPECT_EQ(h.pid, static_cast<long>(::getpid()));
  EXPECT_EQ(h.started_at, "2025-01-02T03:04:05Z");
}

// flock locks belong to open file descriptions: a second open in this process
// conflicts just as another process would.
TEST(RunLock, SecondAcquireIsRefusedNamingTheHolder) {
  harness::testing::TempDir dir;
  RunLock first = RunLock::acquire(dir.str(), "T1");
  try {
    RunLock::acquire(dir.str(), "T2");
    FAIL() << "a second lock on the same directory was granted";
  } catch (const LockBusy& e) {
    EXPECT_EQ(e.holder().pid, static_cast<long>(::getpid()));
    EXPECT_EQ(e.holder().started_at, "T1");
    EXPECT_THAT(e.what(), HasSubstr("pid " + std::to_string(::getpid())));
    EXPECT_THAT(e.what(), HasSubstr("started T1"));
  }
}

TEST(RunLock, ReleasedWhenTheHolderGoes) {
  harness::testing::TempDir dir;
  { RunLock first = RunLock::acquire(dir.str(), "T1"); }
  EXPECT_NO_THROW(RunLock::acquire(dir.str(), "T2"));
}

// A holder killed with SIGKILL leaves its lock file behind with its pid in it;
// the kernel dropped the lock with the process, so the file must not block.
TEST(RunLock, StaleFileOfADeadProcessDoesNotBlock) {
  harness::testing::TempDir dir;
  pid_t child = ::fork();
  if (child == 0) {
    try {
      RunLock lock = RunLock::acquire(dir.str(), "dead");
      ::kill(::getpid(), SIGKILL);
    } catch (...) {
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child could not take the lock";
  EXPECT_EQ(parse_lock_holder(read_file(dir.str() + "/" + kLockFile)).pid, static_cast<long>(child));
  RunLock lock = RunLock::acquire(dir.str(), "alive");
  EXPECT_EQ(parse_lock_holder(read_file(dir.str() + "/" + kLockFile)).pid, static_cast<long>(::getpid()));
}

TEST(RunLock, UnwritableDirectoryIsAnError) {
  EXPECT_THAT([] { RunLock::acquire("/nonexistent/run/dir", "T"); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("/nonexistent/run/dir/.lock")));
}

TEST(RunLock, GarbledFileReadsAsUnknownHolder) {
  EXPECT_EQ(parse_lock_holder("").pid, 0);
  EXPECT_EQ(parse_lock_holder("pid x\n").pid, 0);
  EXPECT_EQ(parse_lock_holder("pid 42\nstarted T\n").pid, 42);
}

}  // namespace
}  // namespace harness::run
