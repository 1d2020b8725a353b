#include "harness/trace/range_index.h"

#include <gtest/gtest.h>

namespace harness::trace {
namespace {

TEST(StepRangeName, RoundTripsAndRejectsLookalikes) {
  EXPECT_EQ(step_range_name(12), "step 12");
  EXPECT_EQ(parse_step_range("step 12"), 12);
  EXPECT_EQ(parse_step_range("step 0"), 0);
  EXPECT_FALSE(parse_step_range("step"));
  EXPECT_FALSE(parse_step_range("step "));
  EXPECT_FALSE(parse_step_range("step 3a"));
  EXPECT_FALSE(parse_step_range("stepping 3"));
  EXPECT_FALSE(parse_step_range("forward"));
}

// Thread 1: step 0 [0,100] ⊃ forward [10,50] ⊃ layer 0 [20,30]; backward [60,90].
RangeIndex sample_index() {
  RangeIndex idx;
  idx.build({{"layer 0", 1, 20, 30}, {"step 0", 1, 0, 100}, {"forward", 1, 10, 50},
             {"backward", 1, 60, 90}, {"loader", 2, 0, 5}, {"step 1", 1, 200, 300}});
  return idx;
}

TEST(RangeIndex, InnermostFindsTheDeepestRangeContainingTheTime) {
  const RangeIndex idx = sample_index();
  ASSERT_NE(idx.innermost(1, 25), nullptr);
  EXPECT_EQ(idx.innermost(1, 25)->name, "layer 0");
  EXPECT_EQ(idx.innermost(1, 25)->path, "forward/layer 0");  // step left out of the path
  EXPECT_EQ(idx.innermost(1, 40)->name, "forward");          // after layer 0 closed
  EXPECT_EQ(idx.innermost(1, 55)->name, "step 0");           // between phases
  EXPECT_EQ(idx.innermost(1, 60)->name, "backward");         // boundaries inclusive
  EXPECT_EQ(idx.innermost(1, 150), nullptr);                 // between steps
  EXPECT_EQ(idx.innermost(3, 25), nullptr);                  // unknown thread
  EXPECT_EQ(idx.innermost(2, 3)->name, "loader");
}

TEST(RangeIndex, InnermostPhaseSkipsStepRanges) {
  const RangeIndex idx = sample_index();
  EXPECT_EQ(idx.innermost_phase(1, 55), nullptr);
  EXPECT_EQ(idx.innermost_phase(1, 25)->path, "forward/layer 0");
}

TEST(RangeIndex, StepWindowsAreGlobalAndTheStepThreadIsTheirOwner) {
  const RangeIndex idx = sample_index();
  EXPECT_EQ(idx.step_at(0), 0);
  EXPECT_EQ(idx.step_at(100), 0);
  EXPECT_FALSE(idx.step_at(150));
  EXPECT_EQ(idx.step_at(250), 1);
  EXPECT_FALSE(idx.step_at(301));
  ASSERT_TRUE(idx.step_thread());
  EXPECT_EQ(*idx.step_thread(), 1u);
  EXPECT_EQ(idx.steps().size(), 2u);
}

TEST(RangeIndex, PhaseEnclosingAStepKeepsItsPath) {
  RangeIndex idx;
  idx.build({{"train", 1, 0, 1000}, {"step 0", 1, 10, 100}, {"forward", 1, 20, 50}});
  EXPECT_EQ(idx.innermost(1, 30)->path, "train/forward");
  EXPECT_EQ(idx.innermost_phase(1, 60)->name, "train");
}

}  // namespace
}  // namespace harness::trace
