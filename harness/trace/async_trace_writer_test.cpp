#include "harness/trace/async_trace_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "harness/testing/trace_fixtures.h"

namespace harness::trace {
namespace {
using nlohmann::json;
using E = TraceEvent;

std::vector<TraceEvent> batch(std::uint64_t t0, int kernels) {
  std::vector<TraceEvent> b;
  for (int i = 0; i < kernels; ++i) {
    const std::uint32_t corr = static_cast<std::uint32_t>(t0 + i + 1);
    b.push_back(E::make_api("cudaLaunchKernel", corr, 1, t0 + 10 * i, t0 + 10 * i + 2));
    b.push_back(E::make_kernel("k", 0, 7, corr, t0 + 10 * i + 5, t0 + 10 * i + 9));
  }
  return b;
}

int count(const json& trace, const std::string& ph, const std::string& cat) {
  int n = 0;
  for (const auto& o : trace) n += o.value("ph", "") == ph && o.value("cat", "") == cat;
  return n;
}

TEST(AsyncTraceWriter, EverySubmittedBatchReachesTheFileInOrder) {
  auto path = testing::scratch_dir() / "trace.json";
  AsyncTraceWriter w(path.string(), 1'000'000, ChromeTraceOptions{1, 4242, "host"});
  w.write_info({{"cell", "c"}});
  for (int b = 0; b < 20; ++b) w.submit(batch(1'000 * (b + 1), 10));
  EXPECT_TRUE(w.close());
  EXPECT_TRUE(w.close());  // idempotent
  json trace = json::parse(testing::read_file(path));  // closed: strict JSON
  EXPECT_EQ(count(trace, "X", "kernel"), 200);
  EXPECT_EQ(count(trace, "X", "cuda_runtime"), 200);
  double last = -1;
  for (const auto& o : trace)
    if (o.value("cat", "") == "kernel") {
      EXPECT_GT(o.at("ts").get<double>(), last);
      last = o.at("ts").get<double>();
    }
  EXPECT_EQ(w.events_dropped(), 0u);
}

TEST(AsyncTraceWriter, OverTheCapBatchesAreDroppedAndMarked) {
  auto path = testing::scratch_dir() / "trace.json";
  // A cap below one batch: nothing fits, everything is counted.
  AsyncTraceWriter w(path.string(), 5, ChromeTraceOptions{1, 4242, "host"});
  w.submit(batch(1'000, 10));
  EXPECT_EQ(w.events_dropped(), 20u);
  EXPECT_TRUE(w.close(TraceCounters{}, 2'000));
  json trace = json::parse(testing::read_file(path));
  bool marked = false;
  for (const auto& o : trace)
    if (o.value("name", "") == "trace truncated") {
      marked = true;
      EXPECT_EQ(o.at("args").at("events_dropped_writer_behind"), 20);
    }
  EXPECT_TRUE(marked);
  EXPECT_EQ(count(trace, "X", "kernel"), 0);
}

TEST(AsyncTraceWriter, SubmitAfterCloseIsCountedNotWritten) {
  auto path = testing::scratch_dir() / "trace.json";
  AsyncTraceWriter w(path.string());
  w.close();
  w.submit(batch(1'000, 1));
  EXPECT_EQ(w.events_dropped(), 2u);
}

TEST(AsyncTraceWriter, PostedProducersRunOnTheWorkerInOrder) {
  auto path = testing::scratch_dir() / "trace.json";
  AsyncTraceWriter w(path.string(), 1'000'000, ChromeTraceOptions{1, 4242, "host"});
  const auto caller = std::this_thread::get_id();
  std::vector<int> order;
  bool off_thread = true;
  for (int b = 0; b < 5; ++b)
    EXPECT_TRUE(w.post([&, b] {
      order.push_back(b);  // only the worker touches it until drain()
      off_thread &= std::this_thread::get_id() != caller;
      return batch(1'000 * (b + 1), 3);
    }));
  EXPECT_TRUE(w.drain(30));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(off_thread);
  EXPECT_TRUE(w.close());
  json trace = json::parse(testing::read_file(path));
  EXPECT_EQ(count(trace, "X", "kernel"), 15);
}

TEST(AsyncTraceWriter, CloseAtTheDeadlineDropsQueuedWorkButFinishesTheFile) {
  auto path = testing::scratch_dir() / "trace.json";
  AsyncTraceWriter w(path.string(), 1'000'000, ChromeTraceOptions{1, 4242, "host"});
  std::atomic<int> ran{0};
  for (int b = 0; b < 3; ++b)
    w.post([&, b] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ++ran;
      return batch(1'000 * (b + 1), 1);
    });
  EXPECT_FALSE(w.close(TraceCounters{}, 5'000, 0.0));  // not drained: the queue was dropped
  EXPECT_LE(ran.load(), 1);                              // at most the one in hand ran
  json trace = json::parse(testing::read_file(path));   // still closed with "]"
  EXPECT_LE(count(trace, "X", "kernel"), 1);
}

TEST(AsyncTraceWriter, PostRefusesBeyondThePendingCap) {
  auto path = testing::scratch_dir() / "trace.json";
  AsyncTraceWriter w(path.string());
  std::atomic<bool> release{false};
  w.post([&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::vector<TraceEvent>{};
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first is in hand
  EXPECT_TRUE(w.post([] { return std::vector<TraceEvent>{}; }, 1));
  EXPECT_FALSE(w.post([] { return std::vector<TraceEvent>{}; }, 1));  // one already waiting
  release = true;
  EXPECT_TRUE(w.drain(30));
}

}  // namespace
}  // namespace harness::trace
