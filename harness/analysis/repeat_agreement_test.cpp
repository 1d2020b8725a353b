// Repeated runs of one setting compared loss by loss (repeat_agreement.h), on
// cells written out by hand: the expected step and relative difference are
// worked out below from the losses given.
#include "harness/analysis/repeat_agreement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;

CellResult run(AxisValues axes, std::vector<double> losses, Outcome o = Outcome::pass) {
  CellResult c = make_cell(std::move(axes), o);
  for (size_t i = 0; i < losses.size(); ++i) {
    StepRecord s;
    s.step = int(i) + 1;
    s.loss = losses[i];
    c.steps.push_back(s);
  }
  return c;
}

TEST(RepeatAgreement, RunsWithTheSameLossesAgreeBitForBit) {
  const std::vector<CellResult> cells = {run({{"precision", "bf16"}, {"repeat", "1"}}, {5.5, 4.25, 3.125}),
                                         run({{"precision", "bf16"}, {"repeat", "2"}}, {5.5, 4.25, 3.125})};
  const auto a = repeat_agreements(cells);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].settings, "precision=bf16");
  EXPECT_EQ(a[0].cells, (std::vector<std::string>{cells[0].id, cells[1].id}));
  EXPECT_EQ(a[0].steps_compared, 3);
  EXPECT_FALSE(a[0].first_difference_step);
}

// Run 2 parts at step 2: |4.002 - 4.0| / 4.0 = 5e-4; run 3 at step 3 only. The
// first step where any run differs is 2, and its difference is run 2's.
TEST(RepeatAgreement, TheFirstStepWhereAnyRunDiffersAndByHowMuch) {
  const std::vector<CellResult> cells = {run({{"repeat", "1"}}, {6.0, 4.0, 3.0, 2.0}),
                                         run({{"repeat", "2"}}, {6.0, 4.002, 3.0, 2.0}),
                                         run({{"repeat", "3"}}, {6.0, 4.0, 3.5, 2.0})};
  const auto a = repeat_agreements(cells);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].settings, "");
  EXPECT_EQ(a[0].steps_compared, 4);
  ASSERT_TRUE(a[0].first_difference_step);
  EXPECT_EQ(*a[0].first_difference_step, 2);
  EXPECT_NEAR(a[0].first_difference, 5e-4, 1e-12);
}

// A run that stopped early (a hang at step 2) is compared over the steps all
// runs recorded; the settings are kept apart and listed in cell order.
TEST(RepeatAgreement, ComparesTheStepsEveryRunRecordedPerSetting) {
  const std::vector<CellResult> cells = {run({{"seq_len", "64"}, {"repeat", "1"}}, {6.0, 5.0, 4.0}),
                                         run({{"seq_len", "128"}, {"repeat", "1"}}, {7.0, 6.0}),
                                         run({{"seq_len", "64"}, {"repeat", "2"}}, {6.0, 5.0}, Outcome::hang),
                                         run({{"seq_len", "128"}, {"repeat", "2"}}, {7.0, 6.5})};
  const auto a = repeat_agreements(cells);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].settings, "seq_len=64");
  EXPECT_EQ(a[0].steps_compared, 2);
  EXPECT_FALSE(a[0].first_difference_step);
  EXPECT_EQ(a[1].settings, "seq_len=128");
  ASSERT_TRUE(a[1].first_difference_step);
  EXPECT_EQ(*a[1].first_difference_step, 2);
  EXPECT_NEAR(a[1].first_difference, 0.5 / 6.0, 1e-15);
}

// The same NaN in both runs is the same bits; a NaN against a number differs by
// an unbounded amount.
TEST(RepeatAgreement, NonFiniteLosses) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto same = repeat_agreements({run({{"repeat", "1"}}, {5.0, nan}), run({{"repeat", "2"}}, {5.0, nan})});
  ASSERT_EQ(same.size(), 1u);
  EXPECT_FALSE(same[0].first_difference_step);
  const auto parted = repeat_agreements({run({{"repeat", "1"}}, {5.0, nan}), run({{"repeat", "2"}}, {5.0, 4.0})});
  ASSERT_EQ(parted.size(), 1u);
  ASSERT_TRUE(parted[0].first_difference_step);
  EXPECT_EQ(*parted[0].first_difference_step, 2);
  EXPECT_TRUE(std::isinf(parted[0].first_difference));
}

// Nothing to compare: no `repeat` axis, one run of a setting, or a run with no step.
TEST(RepeatAgreement, NothingWithoutTwoRunsOfASetting) {
  EXPECT_TRUE(repeat_agreements({run({{"precision", "bf16"}}, {1.0}), run({{"precision", "fp32"}}, {1.0})}).empty());
  EXPECT_TRUE(repeat_agreements({run({{"precision", "bf16"}, {"repeat", "1"}}, {1.0}),
                                 run({{"precision", "fp32"}, {"repeat", "1"}}, {1.0})})
                  .empty());
  EXPECT_TRUE(repeat_agreements({run({{"repeat", "1"}}, {1.0}), run({{"repeat", "2"}}, {}, Outcome::crash)}).empty());
}

}  // namespace
}  // namespace harness
