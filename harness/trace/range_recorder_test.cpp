#include "harness/trace/range_recorder.h"

#include <gtest/gtest.h>

#include <thread>

#include "harness/trace/trace_processor.h"

namespace harness::trace {
namespace {

// A deterministic clock: each reading advances by 10 ns.
std::uint64_t g_ticks = 0;
std::uint64_t fake_clock() { return g_ticks += 10; }

TEST(RangeRecorder, RecordsNestedRangesWithTheInjectedClock) {
  g_ticks = 0;
  RangeRecorder rec(fake_clock);
  rec.push_step(3);     // t=10
  rec.push("forward");  // t=20
  EXPECT_EQ(rec.current_path(current_thread_id()), "forward");
  rec.push("layer 0");  // t=30
  EXPECT_EQ(rec.current_path(current_thread_id()), "forward/layer 0");
  rec.pop();            // t=40
  rec.pop();            // t=50
  rec.pop();            // t=60
  const auto done = rec.take_completed();
  ASSERT_EQ(done.size(), 3u);  // in closing order
  EXPECT_EQ(done[0].name, "layer 0");
  EXPECT_EQ(done[0].start_ns, 30u);
  EXPECT_EQ(done[0].end_ns, 40u);
  EXPECT_EQ(done[2].name, "step 3");
  EXPECT_EQ(done[2].start_ns, 10u);
  EXPECT_EQ(done[2].end_ns, 60u);
  EXPECT_EQ(done[0].range_source, RangeSource::host_recorder);
  EXPECT_EQ(done[0].thread, current_thread_id());
  EXPECT_TRUE(rec.take_completed().empty());
}

TEST(RangeRecorder, UnbalancedPopsAreCountedNotFatal) {
  RangeRecorder rec;
  rec.pop();
  EXPECT_EQ(rec.unbalanced_pops(), 1u);
}

TEST(RangeRecorder, DepthAndCountCapsDropAndCount) {
  RangeRecorder rec(steady_clock_ns, /*cap=*/2);
  for (std::size_t i = 0; i < kMaxRangeDepth + 3; ++i) rec.push("r");
  for (std::size_t i = 0; i < kMaxRangeDepth + 3; ++i) rec.pop();
  EXPECT_EQ(rec.unbalanced_pops(), 0u);  // refused pushes matched their pops
  EXPECT_EQ(rec.take_completed().size(), 2u);
  // 3 refused at depth + (kMaxRangeDepth - 2) over the completed cap.
  EXPECT_EQ(rec.counters().ranges_dropped, 3u + kMaxRangeDepth - 2u);
}

TEST(RangeRecorder, PathCopyTruncatesSafelyWithoutAllocating) {
  RangeRecorder rec;
  rec.push("forward");
  rec.push("layer 11");
  char buf[10];
  const std::size_t n = rec.copy_current_path(current_thread_id(), buf, sizeof buf);
  EXPECT_EQ(n, 9u);
  EXPECT_STREQ(buf, "forward/l");
}

TEST(RangeRecorder, ThreadWithoutRangesSeesTheStepThreadsPath) {
  RangeRecorder rec;
  rec.push_step(0);
  rec.push("backward");
  std::string seen;
  std::thread worker([&] { seen = rec.current_path(current_thread_id()); });
  worker.join();
  EXPECT_EQ(seen, "backward");
}

TEST(RangeRecorder, RecordedRangesDriveTheProcessorsPhases) {
  g_ticks = 0;
  RangeRecorder rec(fake_clock);
  rec.push("forward");                // 10
  const std::uint64_t at = rec.now();  // 20
  rec.pop();                          // 30
  std::vector<TraceEvent> ev = rec.take_completed();
  ev.push_back(TraceEvent::make_api("cudaLaunchKernel", 1, current_thread_id(), at, at + 1));
  ev.push_back(TraceEvent::make_kernel("k", 0, 7, 1, 100, 150));
  const TraceSummary s = process_trace(ev);
  EXPECT_EQ(s.range_source, RangeSource::host_recorder);
  ASSERT_EQ(s.phases.size(), 1u);
  EXPECT_EQ(s.phases[0].path, "forward");
}

}  // namespace
}  // namespace harness::trace
