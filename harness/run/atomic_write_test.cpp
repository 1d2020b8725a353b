// write_file_atomic on a file system that is really full: a 64 KiB tmpfs
// (needs root; skipped with the reason otherwise). The writer must fail with
// the system's reason and leave no .tmp behind.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/core/atomic_file.h"
#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using ::testing::HasSubstr;
using harness::testing::TempDir;

bool has_tmp(const std::filesystem::path& dir) {
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".tmp") return true;
  return false;
}

TEST(AtomicWrite, FullDiskFailsWithTheReasonAndLeavesNoTmp) {
  harness::testing::TempDir dir;
  const std::string mnt = dir.str() + "/small";
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "; needs root)";
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};

  write_file_atomic(mnt + "/small.json", "{}\n");  // a small file fits
  EXPECT_EQ(read_file(mnt + "/small.json"), "{}\n");
  const std::string big(1 << 20, 'x');
  try {
    write_file_atomic(mnt + "/big.json", big);
    FAIL() << "1 MiB was written into a 64 KiB file system";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("No space left on device"));
    EXPECT_THAT(e.what(), HasSubstr("big.json.tmp"));
  }
  EXPECT_FALSE(has_tmp(mnt));
  EXPECT_FALSE(std::filesystem::exists(mnt + "/big.json"));
  EXPECT_EQ(read_file(mnt + "/small.json"), "{}\n");  // the earlier file is untouched
}

}  // namespace
}  // namespace harness::run
