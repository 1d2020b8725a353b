#include "harness/trace/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/trace/chrome_trace_writer.h"
#include "harness/trace/trace_processor.h"

namespace harness::trace {
namespace {

TEST(ActivityBufferPool, RefusesOverTheCapAndReusesReleasedBuffers) {
  ActivityBufferPool pool(/*max_buffers=*/2, /*buffer_bytes=*/64);
  std::uint8_t* a = pool.acquire();
  std::uint8_t* b = pool.acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % kActivityBufferAlign, 0u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  pool.release(a);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.acquire(), a);  // reused, not a third allocation
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(ActivityBufferPool, CountsReleasesOfForeignOrFreeBuffers) {
  ActivityBufferPool pool(1, 16);
  std::uint8_t other[16];
  pool.release(other);
  std::uint8_t* a = pool.acquire();
  pool.release(a);
  pool.release(a);  // twice
  EXPECT_EQ(pool.foreign_releases(), 2u);
  EXPECT_EQ(pool.in_use(), 0u);
}

// CUPTI's side of the contract, played by hand: it fills a buffer with records,
// hands it back when full and asks for the next; with no buffer it drops records
// and later reports how many. Nobody flushes until the end, so a tiny pool runs dry.
struct SimulatedCupti {
  static constexpr std::size_t kRecordBytes = 16;
  ActivityBufferPool& pool;
  std::uint8_t* current = nullptr;
  std::size_t used = 0;
  std::vector<std::pair<std::uint8_t*, std::size_t>> completed;
  std::uint64_t dropped = 0;

  void record() {
    if (current != nullptr && used + kRecordBytes > pool.buffer_bytes()) {
      completed.emplace_back(current, used);
      current = nullptr;
    }
    if (current == nullptr) {
      current = pool.acquire();
      used = 0;
    }
    if (current == nullptr) {
      ++dropped;
      return;
    }
    used += kRecordBytes;
  }
};

TEST(ActivityBufferPool, ExhaustedPoolShowsUpAsDroppedRecordsAndATruncatedTrace) {
  ActivityBufferPool pool(/*max_buffers=*/2, /*buffer_bytes=*/4 * SimulatedCupti::kRecordBytes);
  SimulatedCupti cupti{pool};
  for (int i = 0; i < 20; ++i) cupti.record();
  // Two buffers of four records hold 8; the other 12 are lost.
  EXPECT_EQ(cupti.dropped, 12u);
  EXPECT_GE(pool.refused(), 1u);

  TraceCounters c;  // what CuptiTracer accumulates from its callbacks
  c.records_dropped_by_cupti = cupti.dropped;
  c.buffer_requests_refused = pool.refused();
  const TraceSummary s = process_trace({}, c);
  EXPECT_TRUE(s.truncated);
  EXPECT_EQ(s.counters.dropped(), 12u);
}

}  // namespace
}  // namespace harness::trace
