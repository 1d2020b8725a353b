#include "harness/trace/range_recorder.h"

#include <pthread.h>

#include <chrono>
#include <cstring>

namespace harness::trace {

std::uint64_t steady_clock_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

std::uint32_t current_thread_id() {
  const pthread_t self = pthread_self();
  std::uint32_t low = 0;
  std::memcpy(&low, &self, sizeof low);  // little-endian: the low 32 bits
  return low;
}

RangeRecorder::RangeRecorder(ClockFn clock, std::size_t cap) : clock_(clock), cap_(cap) {}

void RangeRecorder::set_clock(ClockFn clock) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_ = clock;
}

std::uint64_t RangeRecorder::now() const {
  ClockFn c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = clock_;
  }
  return c();
}

void RangeRecorder::push(std::string_view name) {
  const std::uint64_t t = now();
  const std::uint32_t thread = current_thread_id();
  std::lock_guard<std::mutex> lock(mu_);
  ThreadStack& s = stacks_[thread];
  if (s.open.size() >= kMaxRangeDepth) {
    ++s.overflow;
    ++dropped_;
    return;
  }
  const bool is_step = parse_step_range(name).has_value();
  if (is_step && !primary_) primary_ = thread;
  s.open.push_back({std::string(name), t, is_step});
}

void RangeRecorder::pop() {
  const std::uint64_t t = now();
  const std::uint32_t thread = current_thread_id();
  std::lock_guard<std::mutex> lock(mu_);
  ThreadStack& s = stacks_[thread];
  if (s.overflow > 0) {
    --s.overflow;
    return;
  }
  if (s.open.empty()) {
    ++unbalanced_;
    return;
  }
  Open o = std::move(s.open.back());
  s.open.pop_back();
  if (completed_.size() >= cap_) {
    ++dropped_;
    return;
  }
  completed_.push_back(TraceEvent::make_range(std::move(o.name), thread, o.start_ns, t));
}

std::size_t RangeRecorder::copy_current_path(std::uint32_t thread, char* buf,
                                             std::size_t size) const {
  if (size == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  const ThreadStack* s = nullptr;
  auto it = stacks_.find(thread);
  if (it != stacks_.end() && !it->second.open.empty()) {
    s = &it->second;
  } else if (primary_) {
    auto p = stacks_.find(*primary_);
    if (p != stacks_.end()) s = &p->second;
  }
  std::size_t n = 0;
  if (s != nullptr) {
    for (const Open& o : s->open) {
      if (o.is_step) continue;
      if (n > 0 && n + 1 < size) buf[n++] = '/';
      const std::size_t take = std::min(o.name.size(), size - 1 - n);
      std::memcpy(buf + n, o.name.data(), take);
      n += take;
      if (n + 1 >= size) break;
    }
  }
  buf[n] = '\0';
  return n;
}

std::string RangeRecorder::current_path(std::uint32_t thread) const {
  char buf[1024];
  const std::size_t n = copy_current_path(thread, buf, sizeof buf);
  return std::string(buf, n);
}

std::vector<TraceEvent> RangeRecorder::take_completed() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceEvent> out;
  out.swap(completed_);
  return out;
}

std::vector<TraceEvent> RangeRecorder::snapshot_open() const {
  const std::uint64_t t = now();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceEvent> out;
  for (const auto& [thread, s] : stacks_) {
    for (const Open& o : s.open) out.push_back(TraceEvent::make_range(o.name, thread, o.start_ns, t));
  }
  return out;
}

TraceCounters RangeRecorder::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  TraceCounters c;
  c.ranges_dropped = dropped_;
  return c;
}

std::uint64_t RangeRecorder::unbalanced_pops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unbalanced_;
}

}  // namespace harness::trace
