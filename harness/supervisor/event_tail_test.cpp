#include "harness/supervisor/event_tail.h"

#include <fstream>

#include <gtest/gtest.h>

#include "harness/supervisor/phase_stack.h"
#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using testing::ScratchDir;
using Clock = EventTail::Clock;

void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text << std::flush;
}

TEST(EventTail, MissingFileIsNotAnError) {
  ScratchDir dir;
  EventTail tail(dir.path() + "/events.jsonl");
  EXPECT_EQ(tail.poll(), 0u);
  EXPECT_FALSE(tail.last_line_time());
}

TEST(EventTail, KeepsPartialLineUntilItsNewlineArrives) {
  ScratchDir dir;
  const std::string path = dir.path() + "/events.jsonl";
  EventTail tail(path);
  append(path, R"({"t":0.1,"ev":"start"})" "\n" R"({"t":0.2,"ev":"step_)");
  auto t1 = Clock::now();
  EXPECT_EQ(tail.poll(t1), 1u);
  ASSERT_EQ(tail.events().size(), 1u);
  EXPECT_EQ(tail.events()[0]["ev"], "start");
  EXPECT_EQ(tail.partial_line(), R"({"t":0.2,"ev":"step_)");
  EXPECT_EQ(tail.last_line_time(), t1);

  // Nothing complete arrived: the activity time must not move.
  auto t2 = t1 + std::chrono::seconds(1);
  append(path, R"(begin","step":0)");
  EXPECT_EQ(tail.poll(t2), 0u);
  EXPECT_EQ(tail.last_line_time(), t1);

  auto t3 = t2 + std::chrono::seconds(1);
  append(path, "}\n");
  EXPECT_EQ(tail.poll(t3), 1u);
  ASSERT_EQ(tail.events().size(), 2u);
  EXPECT_EQ(tail.events()[1]["ev"], "step_begin");
  EXPECT_EQ(tail.events()[1]["step"], 0);
  EXPECT_EQ(tail.arrivals()[1], t3);
  EXPECT_EQ(tail.last_line_time(), t3);
  EXPECT_TRUE(tail.partial_line().empty());
}

TEST(EventTail, CountsMalformedLinesAndKeepsGoing) {
  ScratchDir dir;
  const std::string path = dir.path() + "/events.jsonl";
  append(path,
         "not json\n"
         "[1,2]\n"
         "{\"t\":1}\n"                  // object without "ev"
         "{\"ev\":3}\n"                 // "ev" not a string
         "\n"                           // blank: ignored, not malformed
         "{\"t\":1,\"ev\":\"done\"}\n");
  EventTail tail(path);
  EXPECT_EQ(tail.poll(), 5u);
  EXPECT_EQ(tail.malformed_lines(), 4u);
  ASSERT_EQ(tail.events().size(), 1u);
  EXPECT_EQ(tail.events()[0]["ev"], "done");
}

TEST(EventTail, ReadsLargeAppendsAcrossChunks) {
  ScratchDir dir;
  const std::string path = dir.path() + "/events.jsonl";
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "{\"t\":0,\"ev\":\"progress\",\"done\":" + std::to_string(i) + "}\n";
  append(path, text);
  EventTail tail(path);
  EXPECT_EQ(tail.poll(), 5000u);
  ASSERT_EQ(tail.events().size(), 5000u);
  EXPECT_EQ(tail.events()[4999]["done"], 4999);
  EXPECT_EQ(tail.malformed_lines(), 0u);
}

// A long run: thousands of steps, each with dozens of phase and progress
// events. Memory holds every step event but only a window of the chatty kinds,
// and the phases still open — judged against the whole file read back — survive.
TEST(EventTail, ChattyKindsAreWindowedWhileStepsAndOpenPhasesAreKept) {
  ScratchDir dir;
  const std::string path = dir.path() + "/events.jsonl";
  std::string text = R"({"ev":"start"})" "\n" R"({"ev":"phase_begin","name":"run"})" "\n";
  const int steps = 400;
  for (int s = 0; s < steps; ++s) {
    text += R"({"ev":"step_begin","step":)" + std::to_string(s) + "}\n";
    for (int l = 0; l < 12; ++l) {
      const std::string at = R"("step":)" + std::to_string(s) + R"(,"layer":)" + std::to_string(l);
      text += R"({"ev":"phase_begin","name":"nsa",)" + at + "}\n";
      text += R"({"ev":"progress","what":"kernel",)" + at + "}\n";
      text += R"({"ev":"phase_end","name":"nsa",)" + at + "}\n";
    }
    text += R"({"ev":"step_end","step":)" + std::to_string(s) + "}\n";
  }
  // The last step hangs inside layer 3's forward.
  text += R"({"ev":"step_begin","step":400})" "\n" R"({"ev":"phase_begin","name":"forward","step":400})" "\n";
  text += R"({"ev":"phase_begin","name":"nsa","step":400,"layer":3})" "\n";
  append(path, text);

  EventTail tail(path);
  size_t handed = 0;
  tail.poll(Clock::now(), [&](const nlohmann::json&, Clock::time_point) { ++handed; });

  std::vector<nlohmann::json> all;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) all.push_back(nlohmann::json::parse(line));
  EXPECT_EQ(handed, all.size());  // every event reached the consumer once

  size_t step_events = 0, chatty = 0;
  for (auto& e : tail.events()) {
    const std::string kind = e["ev"];
    step_events += kind == "step_begin" || kind == "step_end";
    chatty += kind == "phase_begin" || kind == "phase_end" || kind == "progress";
  }
  EXPECT_EQ(step_events, 2u * steps + 1);
  EXPECT_LE(chatty, 2 * kEventWindow + 1);
  EXPECT_GT(tail.windowed_out(), 0u);
  EXPECT_EQ(tail.windowed_out() + tail.events().size(), all.size());

  auto expected = open_phases(all);
  auto got = open_phases(tail.events());
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, expected[i].name);
    EXPECT_EQ(got[i].layer, expected[i].layer);
  }
  EXPECT_EQ(got[0].name, "run");  // opened before 14,000 other events
}

}  // namespace
}  // namespace harness::supervisor
