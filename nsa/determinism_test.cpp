// train.deterministic's effect (determinism.h): ATen's switch on,
// cuBLAS's workspace fixed, and a workspace the environment chose kept.
#include "nsa/determinism.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <ATen/Context.h>

namespace nsa {
namespace {

class Restore : public ::testing::Test {
 protected:
  void TearDown() override {
    at::globalContext().setDeterministicAlgorithms(was_, false);
    ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  }
  bool was_ = at::globalContext().deterministicAlgorithms();
};

TEST_F(Restore, SwitchesAtenAndFixesCublasWorkspace) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  at::globalContext().setDeterministicAlgorithms(false, false);
  use_deterministic_algorithms();
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
  EXPECT_FALSE(at::globalContext().deterministicAlgorithmsWarnOnly());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":4096:8");
}

TEST_F(Restore, KeepsTheWorkspaceTheEnvironmentChose) {
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  use_deterministic_algorithms();
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":16:8");
}

}  // namespace
}  // namespace nsa
