#include "harness/trace/event_store.h"

#include <gtest/gtest.h>

#include <thread>

namespace harness::trace {
namespace {

TraceEvent k(std::uint32_t corr) { return TraceEvent::make_kernel("k", 0, 1, corr, corr, corr + 1); }

TEST(EventStore, DropsAndCountsOverTheCapThenAcceptsAgainAfterTake) {
  EventStore store(3);
  for (std::uint32_t i = 1; i <= 5; ++i) store.add(k(i));
  EXPECT_EQ(store.counters().events_dropped_store_full, 2u);
  auto first = store.take();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].correlation_id, 1u);  // the oldest are kept
  EXPECT_EQ(first[2].correlation_id, 3u);
  EXPECT_TRUE(store.add(k(6)));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_TRUE(store.counters().truncated());
}

TEST(EventStore, ConcurrentAddsAreAllAccountedFor) {
  EventStore store(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (std::uint32_t i = 0; i < 400; ++i) store.add(k(i));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.size() + store.counters().events_dropped_store_full, 1600u);
  EXPECT_EQ(store.size(), 1000u);
}

TEST(RetainedTrace, KeepsTheFirstEventsUpToItsCap) {
  RetainedTrace r;
  r.cap = 4;
  r.append({k(1), k(2), k(3)});
  r.append({k(4), k(5), k(6)});
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events.back().correlation_id, 4u);
  EXPECT_EQ(r.counters.events_dropped_retained_full, 2u);
}

}  // namespace
}  // namespace harness::trace
