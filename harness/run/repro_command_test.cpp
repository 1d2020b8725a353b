// The repro command printed in reports, pasted into a real shell: every
// argument arrives as written and nothing in it is executed.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "harness/core/text.h"
#include "harness/run/execute.h"
#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using harness::testing::TempDir;

std::string shell_output(const std::string& command) {
  std::string out;
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 256> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

TEST(ReproCommand, PastedIntoAShellPassesTheArgumentsIntact) {
  harness::testing::TempDir dir;
  const std::string marker = dir.str() + "/executed";
  const std::string path = "it's $(touch " + marker + ") \"dir\"/s.yaml";
  const std::string id = "data=bytes:a 'b' `touch " + marker + "` $HOME;x";
  const std::string cmd = repro_command(path, id);
  ASSERT_EQ(cmd.rfind("nsa-harness run ", 0), 0u) << cmd;
  // Replace the program with printf: each argument on its own line.
  const std::string printed = shell_output("printf '%s\\n' " + cmd.substr(std::string("nsa-harness ").size()));
  EXPECT_EQ(printed, "run\n" + path + "\n--only\n" + id + "\n");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the shell executed part of " << cmd;
}

TEST(ShellWord, PlainWordsStayReadableOthersAreQuoted) {
  EXPECT_EQ(shell_word("runs/default-1"), "runs/default-1");
  EXPECT_EQ(shell_word("--only"), "--only");
  EXPECT_EQ(shell_word("prefill=batched,precision=fp32"), "prefill=batched,precision=fp32");
  EXPECT_EQ(shell_word("a b"), "'a b'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
}

}  // namespace
}  // namespace harness::run
