#pragma once
// Helpers shared by this folder's tests: a scratch directory per test and file I/O.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>

namespace harness::trace::testing {

inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() / "nsa_trace_test" /
             (std::string(info->test_suite_name()) + "." + info->name() + "." +
              std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// Runs `work` in a forked child that dies by SIGKILL where `work` calls `die`
// (while its writers are alive: no destructor, no flush, no unmap): what a
// file written by a killed process looks like to its parent. Returns the
// child's pid once it is reaped, or -1 (with a test failure) if it did not die
// that way.
using Die = std::function<void()>;
inline pid_t run_then_sigkill(const std::function<void(const Die& die)>& work) {
  int ready[2];
  const pid_t child = pipe(ready) == 0 ? fork() : -1;
  if (child < 0) {
    ADD_FAILURE() << "pipe or fork failed";
    return -1;
  }
  if (child == 0) {
    const Die die = [&] {
      const char byte = 1;
      (void)!write(ready[1], &byte, 1);
      raise(SIGKILL);
    };
    work(die);
    die();
  }
  close(ready[1]);
  char byte = 0;
  const bool finished = read(ready[0], &byte, 1) == 1;
  close(ready[0]);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(finished) << "the child died before its work was done";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  return finished && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? child : -1;
}

}  // namespace harness::trace::testing
