#pragma once
// Test fixtures shared by every test target: a fresh directory per test,
// removed afterwards, and the temp files a failed write may leave.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace harness::testing {

class TempDir {
 public:
  TempDir() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("nsa-test-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Names of the files left in `dir` that end in ".tmp".
inline std::vector<std::string> tmp_files(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".tmp") out.push_back(e.path().filename().string());
  return out;
}

}  // namespace harness::testing
