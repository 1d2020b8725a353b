// The test process symbolizes its own stack, captured the way the child's
// signal handler captures it (backtrace_symbols_fd) and with its own memory
// map: the frame of a function of this file, which the test names, must come
// back as that function's name — the oracle is the source, not the symbolizer.
#include "harness/supervisor/symbolize.h"

#include <execinfo.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Not inlined, so its frame is its own; returns what backtrace_symbols_fd wrote.
__attribute__((noinline)) std::string capture_frames_in_marker_function() {
  void* frames[32];
  const int depth = backtrace(frames, 32);
  char path[] = "/tmp/nsa-symbolize-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  backtrace_symbols_fd(frames, depth, fd);
  close(fd);
  std::string text = read_all(path);
  std::remove(path);
  asm volatile("" ::: "memory");  // keep the call above a call, not a tail call
  return text;
}

TEST(Symbolize, RawFramesBecomeFunctionNames) {
  if (!can_symbolize()) GTEST_SKIP() << "this build has no libdw (install libdw-dev and reconfigure)";
  const std::string raw = "native backtrace of the interrupted thread:\n" + capture_frames_in_marker_function();
  const std::string maps = read_all("/proc/self/maps");
  const std::string out = symbolize_stacks(raw, maps);
  ASSERT_FALSE(out.empty()) << raw;
  EXPECT_NE(out.find("capture_frames_in_marker_function"), std::string::npos) << out;
  EXPECT_NE(out.find("Symbolize_RawFramesBecomeFunctionNames_Test::TestBody"), std::string::npos) << out;
  EXPECT_NE(out.find(raw.substr(0, raw.find('\n'))), std::string::npos) << "the raw lines stay";
}

TEST(Symbolize, NothingToResolveIsEmpty) {
  EXPECT_EQ(symbolize_stacks("phase stack: step 3 > forward\n", read_all("/proc/self/maps")), "");
  EXPECT_EQ(symbolize_stacks("x [0x10]\n", ""), "");
}

}  // namespace
}  // namespace harness::supervisor
