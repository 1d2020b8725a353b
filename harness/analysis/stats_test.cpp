#include "harness/core/stats.h"

#include <cmath>

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(Median, OddCountIsTheMiddleValue) { EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3); }
TEST(Median, EvenCountAveragesTheMiddlePair) { EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5); }
TEST(Median, EmptyIsNaN) { EXPECT_TRUE(std::isnan(median({}))); }

TEST(MadSpread, ScalesTheMedianAbsoluteDeviation) {
  // deviations from median 3: 2,1,0,1,2 → MAD 1.
  EXPECT_DOUBLE_EQ(mad_spread({1, 2, 3, 4, 5}), 1.4826);
}
TEST(MadSpread, IgnoresOneOutlier) {
  // 1000 moves the mean a lot but the MAD not at all: deviations 0,0,0,0,997 → MAD 0.
  EXPECT_DOUBLE_EQ(mad_spread({3, 3, 3, 3, 1000}), 0.0);
}
TEST(MadSpread, SingleValueHasNoSpread) { EXPECT_DOUBLE_EQ(mad_spread({7}), 0.0); }

}  // namespace
}  // namespace harness
