#include <gtest/gtest.h>

#include <filesystem>

#include "harness/trace/cupti_tracer.h"

namespace harness::trace {
namespace {

// Needs no device: the library is linked into this test.
TEST(CuptiLibraryPath, FindsTheLoadedLibcuptiAsAnAbsoluteRealFile) {
  const std::string p = cupti_library_path();
  ASSERT_FALSE(p.empty());
  const std::filesystem::path path(p);
  EXPECT_TRUE(path.is_absolute());
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_EQ(path.filename().string().rfind("libcupti.so", 0), 0u) << p;
}

}  // namespace
}  // namespace harness::trace
