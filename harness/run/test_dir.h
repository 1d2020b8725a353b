#pragma once
// A fresh directory per test, removed afterwards.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace harness::run::testing {

class TestDir {
 public:
  TestDir() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("nsa-run-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace harness::run::testing
