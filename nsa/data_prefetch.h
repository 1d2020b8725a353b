#pragma once
// Training batches drawn ahead of the step on a thread of their own, so the
// step loop never waits for the host to generate tokens.
//
// The producer draws batches strictly in order from one source — the sequence a
// synchronous caller of DataSource::next_batch would see, so seeds, resume and
// data-parallel ranks see the same tokens as before — keeps the rank's rows,
// optionally copies them into page-locked (pinned) host memory so the copy to
// a GPU can be asynchronous, and parks at most `depth` of them in a queue.
//
// Every wait of the caller has a deadline; an exception in the producer
// reaches the caller of next() (the original exception, after the batches
// drawn before it); destruction stops and joins the producer even when the
// queue is full.
#include <ATen/ATen.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "nsa/data.h"

namespace nsa {

struct PrefetchOptions {
  // Rows [first, second) of each drawn batch are kept (a data-parallel rank's
  // slice of the global batch); nullopt keeps them all.
  std::optional<std::pair<int64_t, int64_t>> rows;
  // Page-locked host memory: only for a CUDA target (it needs the CUDA host
  // allocator, and a CPU run gains nothing from it).
  bool pin_memory = false;
  int depth = 2;             // batches drawn ahead at most
  double deadline_s = 600;   // longest wait of next() before it throws
  int64_t limit = -1;        // batches to draw in all (the run's steps); -1 = no end
};

struct PrefetchedBatch {
  at::Tensor tokens;     // [rows, seq_len + 1] int64 on the CPU (pinned when asked)
  double wait_ms = 0.0;  // how long next() waited for it
};

class BatchPrefetcher {
 public:
  // Returns the next batch; called on the producer thread only, in order.
  using Draw = std::function<at::Tensor()>;

  // Batches of `source.next_batch(batch, seq_len)`; the source moves in.
  BatchPrefetcher(DataSource source, int64_t batch, int64_t seq_len, PrefetchOptions options);
  // Batches of any producer (tests use a fake one). Throws std::invalid_argument
  // for depth < 1 or a deadline outside (0, 1e7] seconds.
  BatchPrefetcher(Draw draw, PrefetchOptions options);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch in order. Rethrows the producer's exception once the
  // batches before it are taken; throws std::runtime_error naming the deadline
  // when none arrives in time, std::out_of_range past `limit`.
  PrefetchedBatch next();
  // Batches drawn and waiting (for tests and diagnostics).
  size_t queued() const;

 private:
  void produce();
  at::Tensor prepare(at::Tensor drawn) const;

  Draw draw_;
  PrefetchOptions options_;
  mutable std::mutex mu_;
  std::condition_variable ready_;  // a batch, an error or the end is there
  std::condition_variable space_;  // the queue has room, or stop
  std::deque<at::Tensor> queue_;
  std::exception_ptr error_;
  bool finished_ = false;  // the producer drew `limit` batches
  bool stop_ = false;
  int64_t taken_ = 0;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace nsa
