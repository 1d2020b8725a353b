#include "harness/trace/async_trace_writer.h"

#include <chrono>

#include "harness/trace/gpu_projection.h"

namespace harness::trace {

AsyncTraceWriter::AsyncTraceWriter(const std::string& path, std::size_t max_pending_events,
                                   ChromeTraceOptions options)
    : writer_(path, std::move(options)), max_pending_(max_pending_events), worker_([this] { work(); }) {}

AsyncTraceWriter::~AsyncTraceWriter() { close(); }

void AsyncTraceWriter::write_info(const nlohmann::json& args) {
  push({0, [args](ChromeTraceWriter& w) { w.write_info(args); }});
}

void AsyncTraceWriter::submit(std::vector<TraceEvent> batch) {
  if (batch.empty()) return;
  const std::size_t n = batch.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || pending_events_ + n > max_pending_) {
      dropped_ += n;
      return;
    }
  }
  // The batch moves into the task; the layout work happens on the worker.
  auto shared = std::make_shared<std::vector<TraceEvent>>(std::move(batch));
  push({n, [shared](ChromeTraceWriter& w) { w.write(lay_out_gpu_tracks(std::move(*shared))); }});
}

bool AsyncTraceWriter::post(std::function<std::vector<TraceEvent>()> produce, std::size_t max_pending_tasks) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || queue_.size() >= max_pending_tasks) return false;
  }
  push({0, [this, produce = std::move(produce)](ChromeTraceWriter& w) {
          std::vector<TraceEvent> batch = produce();
          if (!batch.empty()) w.write(lay_out_gpu_tracks(std::move(batch)));
        }});
  return true;
}

bool AsyncTraceWriter::drain(double deadline_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, std::chrono::duration<double>(deadline_s),
                        [this] { return queue_.empty() && !busy_; });
}

std::uint64_t AsyncTraceWriter::events_dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void AsyncTraceWriter::push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    pending_events_ += task.events;
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void AsyncTraceWriter::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) {  // stop_ and nothing left
      finished_ = true;
      idle_.notify_all();
      return;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task.run(writer_);
    lock.lock();
    busy_ = false;
    pending_events_ -= task.events;
    if (queue_.empty()) idle_.notify_all();
  }
}

bool AsyncTraceWriter::close(TraceCounters counters, std::uint64_t at_ns, double deadline_s) {
  bool drained = true;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) return true;
    drained = idle_.wait_for(lock, std::chrono::duration<double>(deadline_s),
                             [this] { return queue_.empty() && !busy_; });
    closed_ = true;
    for (const auto& t : queue_) dropped_ += t.events;  // abandoned at the deadline
    queue_.clear();
    stop_ = true;
  }
  wake_.notify_all();
  {
    // The task in hand gets a grace period; one that never returns (a flush
    // on a dead CUDA context) must not keep the process from exiting.
    std::unique_lock<std::mutex> lock(mu_);
    if (!idle_.wait_for(lock, std::chrono::duration<double>(kJoinGraceS), [this] { return finished_; })) {
      lock.unlock();
      worker_.detach();  // the file stays unterminated; recover_trace() reads it
      return false;
    }
  }
  worker_.join();
  counters.events_dropped_writer_behind += dropped_;
  writer_.write_truncation_mark(counters, at_ns);
  writer_.close();
  file_bytes_ = writer_.file_bytes();
  over_budget_ = writer_.events_over_budget();
  return drained;
}

}  // namespace harness::trace
