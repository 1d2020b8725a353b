#include "nsa/dist/collective_log.h"

#include <gtest/gtest.h>

namespace nsa::dist {
namespace {

TEST(CollectiveLog, SeqStatesAndListener) {
  CollectiveLog log(4);
  std::vector<std::string> heard;
  log.set_listener([&](const CollectiveRecord& r) { heard.push_back(std::to_string(r.seq) + to_string(r.state)); });
  const auto a = log.schedule("allreduce", 1, 0, 10, 40);
  log.start(a);
  log.complete(a, 2.5);
  const auto b = log.schedule("allreduce", 2, 0, 10, 40);
  log.start(b);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(heard, (std::vector<std::string>{"1scheduled", "1started", "1completed", "2scheduled", "2started"}));
  EXPECT_EQ(log.pending().seq, 2);
  EXPECT_EQ(log.last_seq(), 2);
}

TEST(CollectiveLog, RingKeepsTheLastRecords) {
  CollectiveLog log(3);
  for (int i = 0; i < 7; ++i) log.complete(log.schedule("allreduce", i, 0, 1, 4), 0.0);
  auto snap = log.snapshot();
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap.front().seq, 5);
  EXPECT_EQ(snap.back().seq, 7);
  EXPECT_EQ(log.pending().seq, 0);
  log.start(1);  // overwritten long ago: ignored
}

}  // namespace
}  // namespace nsa::dist
