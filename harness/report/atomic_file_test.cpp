#include "harness/core/atomic_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/testing/temp_dir.h"

namespace harness {
namespace {
using ::testing::HasSubstr;

TEST(WriteFileAtomic, WritesTheWholeFileAndLeavesNoTmp) {
  testing::TempDir dir;
  std::string content(1 << 20, 'x');  // larger than any stdio buffer
  content.back() = '\n';
  write_file_atomic(dir.str() + "/big.txt", content);
  EXPECT_EQ(read_file(dir.str() + "/big.txt"), content);
  EXPECT_TRUE(testing::tmp_files(dir.path()).empty());
}

TEST(WriteFileAtomic, ReplacesAnExistingFile) {
  testing::TempDir dir;
  write_file_atomic(dir.str() + "/f", "old contents that are longer");
  write_file_atomic(dir.str() + "/f", "new");
  EXPECT_EQ(read_file(dir.str() + "/f"), "new");
}

TEST(WriteFileAtomic, FailureNamesThePathAndLeavesNothing) {
  testing::TempDir dir;
  try {
    write_file_atomic(dir.str() + "/missing/f", "x");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/missing/f.tmp"));
  }
  EXPECT_TRUE(testing::tmp_files(dir.path()).empty());
}

TEST(WriteFileAtomic, RenameFailureRemovesTheTmp) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "target" / "child");  // a non-empty directory cannot be replaced
  EXPECT_THROW(write_file_atomic(dir.str() + "/target", "x"), std::runtime_error);
  EXPECT_TRUE(testing::tmp_files(dir.path()).empty());
}

TEST(ReadFile, MissingFileNamesThePath) {
  EXPECT_THAT([] { read_file("/nonexistent/dir/file"); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("/nonexistent/dir/file")));
}

}  // namespace
}  // namespace harness
