// train.deterministic's effect (determinism.h): ATen's switch on,
// cuBLAS's workspace fixed, and a workspace the environment chose kept.
#include "nsa/determinism.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
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

// `auto` (the default of both flags) runs the reproducible kernels exactly when
// deterministic algorithms are on; a value the run set is kept either way.
TEST_F(Restore, AutoBackwardChoicesFollowTheDeterministicSwitch) {
  const Flags defaults;
  at::globalContext().setDeterministicAlgorithms(true, false);
  EXPECT_EQ(backward_choice(defaults, "NSA_WINDOW_BWD"), "ours");
  EXPECT_EQ(backward_choice(defaults, "NSA_SELECTED_DQ"), "slots");
  at::globalContext().setDeterministicAlgorithms(false, false);
  EXPECT_EQ(backward_choice(defaults, "NSA_WINDOW_BWD"), "cudnn_atomic");
  EXPECT_EQ(backward_choice(defaults, "NSA_SELECTED_DQ"), "atomic");
  for (bool deterministic : {false, true}) {
    at::globalContext().setDeterministicAlgorithms(deterministic, false);
    Flags set;
    set.set("NSA_WINDOW_BWD", "cudnn");
    set.set("NSA_SELECTED_DQ", deterministic ? "atomic" : "kernel");
    EXPECT_EQ(backward_choice(set, "NSA_WINDOW_BWD"), "cudnn");
    EXPECT_EQ(backward_choice(set, "NSA_SELECTED_DQ"), deterministic ? "atomic" : "kernel");
  }
  EXPECT_THROW(backward_choice(defaults, "NSA_OVERLAP_STREAMS"), std::invalid_argument);
}

// Each row names a flag whose default is `auto` and two of its own choices.
TEST(BackwardChoices, NameChoicesTheirFlagsAccept) {
  for (const BackwardChoice& c : kBackwardChoices) {
    const FlagInfo* f = find_flag(c.flag);
    ASSERT_NE(f, nullptr) << c.flag;
    EXPECT_EQ(f->default_value, "auto") << c.flag;
    for (std::string_view v : {c.reproducible, c.fast})
      EXPECT_NE(std::find(f->allowed.begin(), f->allowed.end(), v), f->allowed.end()) << c.flag << " " << v;
  }
}

}  // namespace
}  // namespace nsa
