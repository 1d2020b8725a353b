#include "harness/analysis/gtest_failures.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(GtestFailures, NamesEachFailedTestOnceInOrder) {
  const char* out =
      "[ RUN      ] Oracle.GateIsAnIndependentSigmoidPerHeadAndBranch\n"
      "nsa/nsa_oracle_test.cpp:120: Failure\n"
      "[  FAILED  ] Oracle.GateIsAnIndependentSigmoidPerHeadAndBranch (3 ms)\n"
      "[ RUN      ] Shapes/PathsAgree.Float32WithinTolerance/mlp_B2_S107\n"
      "[  FAILED  ] Shapes/PathsAgree.Float32WithinTolerance/mlp_B2_S107, where GetParam() = 48-byte object (41 ms)\n"
      "[       OK ] Spec.ScoresAreScaledByOneOverSqrtDk (1 ms)\n"
      "[==========] 3 tests from 2 test suites ran. (45 ms total)\n"
      "[  PASSED  ] 1 test.\n"
      "[  FAILED  ] 2 tests, listed below:\n"
      "[  FAILED  ] Oracle.GateIsAnIndependentSigmoidPerHeadAndBranch\n"
      "[  FAILED  ] Shapes/PathsAgree.Float32WithinTolerance/mlp_B2_S107, where GetParam() = 48-byte object\n"
      "\n 2 FAILED TESTS\n";
  EXPECT_EQ(failed_gtest_names(out), (std::vector<std::string>{"Oracle.GateIsAnIndependentSigmoidPerHeadAndBranch",
                                                               "Shapes/PathsAgree.Float32WithinTolerance/mlp_B2_S107"}));
}

TEST(GtestFailures, APassingRunNamesNothing) {
  EXPECT_TRUE(failed_gtest_names("[==========] 5 tests ran.\n[  PASSED  ] 5 tests.\n").empty());
  EXPECT_TRUE(failed_gtest_names("").empty());
  // A line that only mentions FAILED elsewhere is not a result line.
  EXPECT_TRUE(failed_gtest_names("note: [  FAILED  ] Not.AtLineStart\n").empty());
}

}  // namespace
}  // namespace harness
