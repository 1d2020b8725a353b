// GraphTap against the rule it states (graph_tap.h): the capture of a run
// whose probes want tensors later takes them, a replayed step that asks gets
// those, a step that does not ask gets nothing, and a graph captured without
// them sends tensor-reading steps back to eager.
#include "harness/child/graph_tap.h"

#include <gtest/gtest.h>

namespace harness::child {
namespace {
using nsa::StepExec;

TensorTap tap_with(const char* name) {
  TensorTap t;
  t.entries.push_back({name, 0, -1, at::ones({2})});
  return t;
}

TEST(GraphTap, ACaptureTakesTheTensorsThatLaterReplaysHandToTheProbes) {
  GraphTap g(/*later=*/true);
  EXPECT_TRUE(g.arms_observer());
  EXPECT_FALSE(g.needs_eager_for_tensors());
  auto eager = tap_with("eager");  // step 1: nobody asked, the tap is emptied
  g.after_step(StepExec::eager, /*probes_asked=*/false, eager);
  EXPECT_TRUE(eager.entries.empty());
  auto capture = tap_with("graph");
  g.after_step(StepExec::capture, false, capture);
  EXPECT_TRUE(capture.entries.empty());
  EXPECT_FALSE(g.arms_observer()) << "after the capture the observer takes tensors only when a probe asks";
  EXPECT_FALSE(g.needs_eager_for_tensors());
  TensorTap replay;  // a replay hands over nothing itself
  g.after_step(StepExec::replay, /*probes_asked=*/true, replay);
  ASSERT_EQ(replay.entries.size(), 1u);
  EXPECT_EQ(replay.entries[0].name, "graph");
  TensorTap unasked;
  g.after_step(StepExec::replay, false, unasked);
  EXPECT_TRUE(unasked.entries.empty());
  auto watched = tap_with("eager again");  // a step run eagerly after the capture keeps its own tensors
  g.after_step(StepExec::eager, true, watched);
  ASSERT_EQ(watched.entries.size(), 1u);
  EXPECT_EQ(watched.entries[0].name, "eager again");
}

TEST(GraphTap, AGraphCapturedWithoutTensorsSendsTensorStepsBackToEager) {
  for (bool later : {false, true}) {
    GraphTap g(later);
    EXPECT_EQ(g.arms_observer(), later);
    TensorTap capture;  // nothing taken: not armed, or the model handed over nothing
    g.after_step(StepExec::capture, false, capture);
    EXPECT_TRUE(g.needs_eager_for_tensors());
    TensorTap replay;
    g.after_step(StepExec::replay, true, replay);
    EXPECT_TRUE(replay.entries.empty());
  }
}

TEST(GraphTap, ACaptureStepThatAskedKeepsItsTensorsForTheProbes) {
  GraphTap g(true);
  auto capture = tap_with("graph");
  g.after_step(StepExec::capture, /*probes_asked=*/true, capture);
  ASSERT_EQ(capture.entries.size(), 1u);
  EXPECT_FALSE(g.needs_eager_for_tensors());
}

}  // namespace
}  // namespace harness::child
