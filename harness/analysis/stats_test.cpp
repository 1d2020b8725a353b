#include "harness/core/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

TEST(TheilSen, AStraightLineIsItsOwnTrendWithNoScatter) {
  const Trend t = theil_sen({10, 8, 6, 4, 2});
  EXPECT_DOUBLE_EQ(t.slope, -2);
  EXPECT_DOUBLE_EQ(t.at(0), 10);
  EXPECT_DOUBLE_EQ(t.spread, 0);
}
TEST(TheilSen, OneSpikeDoesNotTurnAFallIntoARise) {
  // Six step losses of a batch-1 run (the seed matrix, m7c S=256): falling,
  // with one hard batch at step 5. The first two against the last two rise
  // (5.67 → 6.04); every pair's slope, by its median, falls.
  const std::vector<double> loss = {5.6881, 5.6507, 5.3486, 5.4381, 6.8036, 5.2696};
  const Trend t = theil_sen(loss);
  EXPECT_LT(t.slope, 0);
  EXPECT_LT(t.at(5), t.at(0) * 0.98);
  // Brute-force oracle: the median of the 15 pairwise slopes, sorted by hand.
  std::vector<double> slopes;
  for (size_t i = 0; i < loss.size(); ++i)
    for (size_t j = i + 1; j < loss.size(); ++j) slopes.push_back((loss[j] - loss[i]) / double(j - i));
  std::sort(slopes.begin(), slopes.end());
  EXPECT_DOUBLE_EQ(t.slope, slopes[7]);
}
TEST(TheilSen, FlatNoiseHasNoTrendAndReportsItsScatter) {
  const Trend t = theil_sen({3, 3.2, 2.8, 3, 3.2, 2.8, 3});
  EXPECT_NEAR(t.slope, 0, 1e-12);
  EXPECT_GT(t.spread, 0.1);
}
TEST(TheilSen, FewerThanTwoPointsHaveNoSlope) { EXPECT_TRUE(std::isnan(theil_sen({1}).slope)); }

}  // namespace
}  // namespace harness
