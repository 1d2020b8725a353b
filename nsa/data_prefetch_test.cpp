// BatchPrefetcher against independent oracles: a second DataSource with the same
// seed drawn synchronously (the order and contents), fake producers that throw,
// block or sleep (errors, deadlines, wait times measured around the call).
#include "nsa/data_prefetch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nsa {
namespace {
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A batch of one row whose every token is `n`: which draw it came from is readable.
at::Tensor numbered(int64_t n) { return at::full({1, 4}, n, at::kLong); }

// Polls `done` every millisecond until it holds or `limit` passes.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 10s) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Destroys `p` on another thread and fails the whole test binary if that does
// not return within `limit`: a destructor that never joins must not hang the suite.
void destroy_within(std::unique_ptr<BatchPrefetcher>& p, std::chrono::seconds limit) {
  auto done = std::async(std::launch::async, [&p] { p.reset(); });
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "BatchPrefetcher's destructor did not return within %lld s\n",
                 static_cast<long long>(limit.count()));
    std::_Exit(1);
  }
}

class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes)
      : path_(std::filesystem::temp_directory_path() / ("nsa-prefetch-" + std::to_string(::getpid()) + ".bin")) {
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Every batch, in order, equals the synchronous draw of an identical source, sliced alike.
void expect_same_sequence(const std::string& spec, int64_t batch, int64_t seq_len, std::pair<int64_t, int64_t> rows) {
  constexpr int kSteps = 6;
  DataSource oracle(spec, 1234);
  PrefetchOptions opt;
  opt.rows = rows;
  opt.limit = kSteps;
  BatchPrefetcher p(DataSource(spec, 1234), batch, seq_len, opt);
  at::Tensor previous;
  for (int step = 1; step <= kSteps; ++step) {
    // Every other step lets the producer run ahead and fill the queue: timing must not change the data.
    if (step % 2 == 0) ASSERT_TRUE(eventually([&] { return p.queued() == std::min<size_t>(2, kSteps - step + 1); }));
    const at::Tensor got = p.next().tokens;
    const at::Tensor want = oracle.next_batch(batch, seq_len).slice(0, rows.first, rows.second);
    ASSERT_EQ(got.sizes(), want.sizes()) << spec << " step " << step;
    EXPECT_EQ(got.scalar_type(), at::kLong);
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(at::equal(got, want)) << spec << " step " << step << ": the prefetched batch differs from the "
                                      << "synchronous draw";
    if (previous.defined()) EXPECT_FALSE(at::equal(got, previous)) << "step " << step << " repeats the step before";
    previous = got;
  }
  EXPECT_THROW(p.next(), std::out_of_range) << "a batch past the limit of " << kSteps;
}

TEST(DataPrefetch, SyntheticMatchesSynchronousDraws) { expect_same_sequence("synthetic", 4, 33, {1, 3}); }

TEST(DataPrefetch, BytesMatchSynchronousDraws) {
  std::vector<uint8_t> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  TempFile file(bytes);
  expect_same_sequence("bytes:" + file.str(), 6, 40, {2, 5});
}

TEST(DataPrefetch, AllRowsWhenNoSliceIsGiven) {
  DataSource oracle("synthetic", 7);
  BatchPrefetcher p(DataSource("synthetic", 7), 3, 16, PrefetchOptions{});
  for (int step = 0; step < 3; ++step) EXPECT_TRUE(at::equal(p.next().tokens, oracle.next_batch(3, 16)));
}

TEST(DataPrefetch, ProducerExceptionReachesCallerAfterEarlierBatches) {
  int64_t n = 0;
  BatchPrefetcher p(
      [&n]() -> at::Tensor {
        if (++n == 3) throw std::runtime_error("disk gone at batch 3");
        return numbered(n);
      },
      PrefetchOptions{});
  EXPECT_EQ(p.next().tokens[0][0].item<int64_t>(), 1);
  EXPECT_EQ(p.next().tokens[0][0].item<int64_t>(), 2);
  for (int call = 0; call < 2; ++call) {  // and again on a later call
    try {
      p.next();
      ADD_FAILURE() << "next() returned after the producer threw";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "disk gone at batch 3");
    }
  }
}

TEST(DataPrefetch, RowsOutsideTheBatchAreAnError) {
  PrefetchOptions opt;
  opt.rows = std::pair<int64_t, int64_t>{0, 2};  // numbered() has one row
  BatchPrefetcher p([] { return numbered(0); }, opt);
  try {
    p.next();
    ADD_FAILURE() << "rows [0, 2) of a one-row batch were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rows [0, 2)"), std::string::npos) << e.what();
  }
}

TEST(DataPrefetch, DestructionWithAFullQueueIsPrompt) {
  std::atomic<int> draws{0};
  auto p = std::make_unique<BatchPrefetcher>([&draws] { return numbered(++draws); }, PrefetchOptions{});
  ASSERT_TRUE(eventually([&] { return p->queued() == 2; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(draws.load(), 2) << "the producer drew beyond the queue's depth";
  const auto t0 = Clock::now();
  destroy_within(p, 10s);
  EXPECT_LT(ms_between(t0, Clock::now()), 5000.0);
}

TEST(DataPrefetch, StuckProducerHitsTheDeadline) {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  PrefetchOptions opt;
  opt.deadline_s = 0.2;
  auto p = std::make_unique<BatchPrefetcher>(
      [&]() {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return released; });
        return numbered(1);
      },
      opt);
  const auto t0 = Clock::now();
  try {
    p->next();
    ADD_FAILURE() << "next() returned while the producer was blocked";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0.2 s deadline"), std::string::npos) << e.what();
  }
  EXPECT_GE(ms_between(t0, Clock::now()), 200.0) << "gave up before the deadline";
  {
    std::lock_guard<std::mutex> lk(mu);
    released = true;
  }
  cv.notify_all();
  destroy_within(p, 10s);
}

TEST(DataPrefetch, SlowProducerShowsAsWaitTime) {
  constexpr int kBatches = 3;
  constexpr auto kDrawTime = 150ms;
  std::vector<Clock::time_point> drawn(kBatches);
  std::atomic<int> n{0};
  PrefetchOptions opt;
  opt.limit = kBatches;
  BatchPrefetcher p(
      [&] {
        std::this_thread::sleep_for(kDrawTime);
        const int i = n++;
        drawn[i] = Clock::now();
        return numbered(i);
      },
      opt);
  double total_wait = 0;
  for (int i = 0; i < kBatches; ++i) {
    const auto call = Clock::now();
    const PrefetchedBatch b = p.next();
    const auto back = Clock::now();
    // The wait lies between "until the batch existed" and "the whole call".
    EXPECT_LE(b.wait_ms, ms_between(call, back) + 0.01) << "batch " << i;
    EXPECT_GE(b.wait_ms, ms_between(call, drawn[i]) - 0.01) << "batch " << i << " came before it was drawn";
    total_wait += b.wait_ms;
  }
  // The producer needs 450 ms for the three; a consumer doing nothing else waits for most of it.
  EXPECT_GE(total_wait, 200.0);
}

TEST(DataPrefetch, ReadyBatchHasNoWait) {
  BatchPrefetcher p([] { return numbered(0); }, PrefetchOptions{});
  ASSERT_TRUE(eventually([&] { return p.queued() == 2; }));
  const auto call = Clock::now();
  const PrefetchedBatch b = p.next();
  EXPECT_LE(b.wait_ms, ms_between(call, Clock::now()) + 0.01);
  EXPECT_LT(b.wait_ms, 50.0) << "a queued batch should be taken at once";
}

TEST(DataPrefetch, RejectsBadOptions) {
  PrefetchOptions depth0;
  depth0.depth = 0;
  EXPECT_THROW(BatchPrefetcher([] { return numbered(0); }, depth0), std::invalid_argument);
  PrefetchOptions no_deadline;
  no_deadline.deadline_s = 0;
  EXPECT_THROW(BatchPrefetcher([] { return numbered(0); }, no_deadline), std::invalid_argument);
}

TEST(DataPrefetch, PinnedWhenAsked) {
  if (!at::hasCUDA()) GTEST_SKIP() << "page-locked memory needs the CUDA host allocator";
  PrefetchOptions opt;
  opt.pin_memory = true;
  opt.rows = std::pair<int64_t, int64_t>{1, 2};
  DataSource oracle("synthetic", 3);
  BatchPrefetcher p(DataSource("synthetic", 3), 2, 8, opt);
  const at::Tensor got = p.next().tokens;
  EXPECT_TRUE(got.is_pinned());
  EXPECT_TRUE(at::equal(got, oracle.next_batch(2, 8).slice(0, 1, 2)));
}

}  // namespace
}  // namespace nsa
