#include "harness/supervisor/phase_stack.h"

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {
using nlohmann::json;

json begin(const std::string& name, int step, std::optional<int> layer = std::nullopt) {
  json e{{"ev", "phase_begin"}, {"name", name}, {"step", step}};
  if (layer) e["layer"] = *layer;
  return e;
}
json end(const std::string& name, int step, std::optional<int> layer = std::nullopt) {
  json e{{"ev", "phase_end"}, {"name", name}, {"step", step}};
  if (layer) e["layer"] = *layer;
  return e;
}

TEST(PhaseStack, UnmatchedBeginsInOrder) {
  std::vector<json> ev = {{{"ev", "step_begin"}, {"step", 0}}, begin("forward", 0), end("forward", 0),
                          {{"ev", "step_end"}, {"step", 0}},   {{"ev", "step_begin"}, {"step", 1}},
                          begin("forward", 1),                 begin("nsa", 1, 0),
                          end("nsa", 1, 0),                    begin("nsa", 1, 1),
                          begin("prefill", 1, 1)};
  auto open = open_phases(ev);
  ASSERT_EQ(open.size(), 3u);
  EXPECT_EQ(open[0].name, "forward");
  EXPECT_EQ(open[1].layer, 1);
  EXPECT_EQ(step_in_progress(ev), 1);
  EXPECT_EQ(describe(open, 1), "step 1 / forward / nsa (layer 1) / prefill (layer 1)");
}

TEST(PhaseStack, EndClosesInnerPhasesThatNeverReported) {
  std::vector<json> ev = {begin("forward", 0), begin("nsa", 0, 0), end("forward", 0)};
  EXPECT_TRUE(open_phases(ev).empty());
}

TEST(PhaseStack, StepEndClosesItsPhases) {
  std::vector<json> ev = {{{"ev", "step_begin"}, {"step", 0}}, begin("forward", 0), {{"ev", "step_end"}, {"step", 0}}};
  EXPECT_TRUE(open_phases(ev).empty());
  EXPECT_FALSE(step_in_progress(ev));
}

TEST(PhaseStack, LastEvents) {
  std::vector<json> ev;
  for (int i = 0; i < 5; ++i) ev.push_back({{"i", i}});
  auto last = last_events(ev, 2);
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0]["i"], 3);
  EXPECT_EQ(last_events(ev, 10).size(), 5u);
}

}  // namespace
}  // namespace harness::supervisor
