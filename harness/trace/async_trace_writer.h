#pragma once
// The trace file, written off the training thread. Turning a step's CUPTI
// records into trace JSON costs about as much CPU time as a training step
// (hundreds of thousands of events per step on a 12-layer model); done inline,
// every step would wait for it. Here the probe hands each batch over and goes
// on; one worker thread lays out the GPU tracks (gpu_projection.h) and appends
// to the ChromeTraceWriter, which stays single-threaded.
//
// Bounded: batches queue up to `max_pending_events`; a batch that would exceed
// it is dropped and counted (the trace then carries a "trace truncated" mark),
// so a slow disk can cost trace events, never memory or training time.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/trace/chrome_trace_writer.h"
#include "harness/trace/trace_event.h"

namespace harness::trace {

class AsyncTraceWriter {
 public:
  // Opens `path` at once (throws like ChromeTraceWriter) and starts the worker.
  explicit AsyncTraceWriter(const std::string& path, std::size_t max_pending_events = 4'000'000,
                            ChromeTraceOptions options = {});
  ~AsyncTraceWriter();  // close() with the default deadline
  AsyncTraceWriter(const AsyncTraceWriter&) = delete;
  AsyncTraceWriter& operator=(const AsyncTraceWriter&) = delete;

  void write_info(const nlohmann::json& args);
  // Queues one batch and returns; dropped (and counted) when the queue is full.
  void submit(std::vector<TraceEvent> batch);
  // Queues a producer that runs on the worker and returns the batch to write:
  // the collection itself (CUPTI flush, record conversion) then happens off the
  // caller's thread too. Producers run in the order posted, one at a time.
  // Returns false (nothing queued) when `max_pending_tasks` are already waiting:
  // a producer that drains cumulative sources loses nothing by being skipped.
  bool post(std::function<std::vector<TraceEvent>()> produce, std::size_t max_pending_tasks = 64);
  // Waits until everything queued has been written, at most `deadline_s`.
  bool drain(double deadline_s = 120.0);
  // Events dropped because the queue was full.
  std::uint64_t events_dropped() const;
  // The file's size and the events past its budget; final after close().
  std::uint64_t file_bytes() const { return file_bytes_; }
  std::uint64_t events_over_budget() const { return over_budget_; }
  // Writes what is queued (waiting at most `deadline_s`), then the truncation
  // mark when `counters` (plus this writer's drops) say events were lost, then
  // "]". Batches still queued at the deadline are dropped and the file is
  // closed anyway; a task still running kJoinGraceS after that is abandoned
  // with its thread (the file then stays unterminated, as after a kill).
  // Returns false in either case. Idempotent.
  bool close(TraceCounters counters = {}, std::uint64_t at_ns = 0, double deadline_s = 120.0);

 private:
  struct Task {
    std::size_t events = 0;
    std::function<void(ChromeTraceWriter&)> run;
  };
  void push(Task task);
  void work();

  ChromeTraceWriter writer_;
  const std::size_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  std::size_t pending_events_ = 0;
  bool busy_ = false, stop_ = false, closed_ = false, finished_ = false;
  static constexpr double kJoinGraceS = 5.0;
  std::uint64_t dropped_ = 0;
  std::uint64_t file_bytes_ = 0, over_budget_ = 0;
  std::thread worker_;
};

}  // namespace harness::trace
