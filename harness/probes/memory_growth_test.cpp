#include "harness/probes/memory_growth.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(MemoryGrowth, OneTensorKeptPerStepIsSteadyGrowth) {
  // Warm-up step, then 7.3 MB more at every step (the size of one kept activation).
  std::vector<double> in_use{100e6, 408.6e6};
  for (int i = 0; i < 5; ++i) in_use.push_back(in_use.back() + 7.3e6);
  auto g = steady_growth(in_use);
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->bytes_per_step, 7.3e6);
  EXPECT_EQ(g->steps, 5u);
}

TEST(MemoryGrowth, FlatMemoryWithAllocatorJitterIsNotGrowth) {
  EXPECT_FALSE(steady_growth({100e6, 400e6, 400.001e6, 399.998e6, 400.002e6, 400.0e6, 400.001e6}));
}

TEST(MemoryGrowth, OneJumpIsNotSteadyGrowth) {
  EXPECT_FALSE(steady_growth({100e6, 400e6, 400e6, 450e6, 450e6, 450e6, 450e6}));
}

TEST(MemoryGrowth, TooFewStepsToJudge) { EXPECT_FALSE(steady_growth({1e6, 2e6, 3e6, 4e6})); }

}  // namespace
}  // namespace harness
