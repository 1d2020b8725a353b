#include "harness/supervisor/event_tail.h"

#include <fstream>

#include <gtest/gtest.h>

#include "harness/supervisor/supervisor_test_util.h"

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

}  // namespace
}  // namespace harness::supervisor
