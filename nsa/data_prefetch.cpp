#include "nsa/data_prefetch.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace nsa {
namespace {
using Clock = std::chrono::steady_clock;
constexpr double kMaxDeadlineS = 1e7;

std::string seconds_text(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t;
}
}  // namespace

BatchPrefetcher::BatchPrefetcher(DataSource source, int64_t batch, int64_t seq_len, PrefetchOptions options)
    : BatchPrefetcher(
          // std::function needs a copyable callable: the source lives behind a shared_ptr.
          [src = std::make_shared<DataSource>(std::move(source)), batch, seq_len] {
            return src->next_batch(batch, seq_len);
          },
          std::move(options)) {}

BatchPrefetcher::BatchPrefetcher(Draw draw, PrefetchOptions options)
    : draw_(std::move(draw)), options_(std::move(options)) {
  if (options_.depth < 1)
    throw std::invalid_argument("data prefetch: depth must be at least 1, got " + std::to_string(options_.depth));
  // The upper end keeps the deadline's time point inside steady_clock's range.
  if (!(options_.deadline_s > 0) || !(options_.deadline_s <= kMaxDeadlineS))
    throw std::invalid_argument("data prefetch: deadline_s must be in (0, 1e7] seconds, got " +
                                std::to_string(options_.deadline_s));
  thread_ = std::thread([this] { produce(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  // A producer parked on a full queue wakes and leaves; one inside draw_()
  // leaves as soon as that batch is drawn.
  space_.notify_all();
  thread_.join();
}

at::Tensor BatchPrefetcher::prepare(at::Tensor drawn) const {
  if (options_.rows) {
    const auto [first, second] = *options_.rows;
    if (drawn.dim() < 1 || first < 0 || first > second || second > drawn.size(0))
      throw std::invalid_argument("data prefetch: rows [" + std::to_string(first) + ", " + std::to_string(second) +
                                  ") do not fit a batch of shape " + c10::str(drawn.sizes()));
    drawn = drawn.slice(0, first, second);
  }
  // Pinning copies the kept rows only; contiguous() makes the copy when no pinning does.
  return options_.pin_memory ? drawn.pin_memory() : drawn.contiguous();
}

void BatchPrefetcher::produce() {
  for (int64_t n = 0; options_.limit < 0 || n < options_.limit; ++n) {
    {
      // Room first, then draw: never more than `depth` batches held ahead.
      std::unique_lock<std::mutex> lk(mu_);
      space_.wait(lk, [this] { return stop_ || static_cast<int>(queue_.size()) < options_.depth; });
      if (stop_) return;
    }
    at::Tensor batch;
    try {
      batch = prepare(draw_());
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      error_ = std::current_exception();
      ready_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(std::move(batch));
    }
    ready_.notify_all();
  }
  std::lock_guard<std::mutex> lk(mu_);
  finished_ = true;
  ready_.notify_all();
}

PrefetchedBatch BatchPrefetcher::next() {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.deadline_s));
  std::unique_lock<std::mutex> lk(mu_);
  const bool arrived = ready_.wait_until(lk, deadline, [this] { return !queue_.empty() || error_ || finished_; });
  if (!arrived)
    throw std::runtime_error("data prefetch: batch " + std::to_string(taken_ + 1) + " did not arrive within the " +
                             seconds_text(options_.deadline_s) + " s deadline (the producer thread is stuck drawing it)");
  if (!queue_.empty()) {
    PrefetchedBatch out{std::move(queue_.front()), 0.0};
    queue_.pop_front();
    ++taken_;
    lk.unlock();
    space_.notify_all();
    out.wait_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return out;
  }
  // Kept, so every later call fails the same way.
  if (error_) std::rethrow_exception(error_);
  throw std::out_of_range("data prefetch: all " + std::to_string(options_.limit) + " batches were taken");
}

size_t BatchPrefetcher::queued() const {
  std::lock_guard<std::mutex> lk(mu_);
  return queue_.size();
}

}  // namespace nsa
