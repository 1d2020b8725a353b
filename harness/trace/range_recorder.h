#pragma once
// Our own host-side range recorder: the model's observer hooks push/pop phase
// names here directly, alongside NVTX. It exists because NVTX reaches CUPTI only
// through NVTX_INJECTION64_PATH (README "How NVTX reaches CUPTI") and a probe once
// saw kernels but no markers even with it set; with this recorder the phase
// attribution never depends on that.
//
// Timestamps come from `clock`, which must be CUPTI's clock when CUPTI is on
// (CuptiTracer installs cuptiGetTimestamp) — otherwise kernels land in the wrong
// phase. Thread ids are current_thread_id(), the id CUPTI puts in its records.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "harness/trace/range_index.h"
#include "harness/trace/trace_event.h"

namespace harness::trace {

using ClockFn = std::uint64_t (*)();
std::uint64_t steady_clock_ns();
// The low 32 bits of pthread_self(): the thread id CUPTI writes into API and
// marker records on Linux (kineto's threadId() relies on the same).
std::uint32_t current_thread_id();

// Why 1 << 18: completed ranges between two take_completed() calls (one step).
// A step of m7c_125m opens ~100 ranges (phases × layers × branches); a
// sequential prefill with per-token ranges opens S × layers ≈ 25k. 262k leaves
// 10× headroom at ~20 MB.
inline constexpr std::size_t kMaxRecordedRanges = std::size_t{1} << 18;
// Why 64: real nesting is step/phase/layer/branch/op (≤ 8). Deeper means a
// missing pop; refusing keeps a leak from growing the stack forever.
inline constexpr std::size_t kMaxRangeDepth = 64;

class RangeRecorder {
 public:
  explicit RangeRecorder(ClockFn clock = steady_clock_ns, std::size_t cap = kMaxRecordedRanges);

  void set_clock(ClockFn clock);
  std::uint64_t now() const;

  void push(std::string_view name);
  void pop();
  void push_step(int step) { push(step_range_name(step)); }

  // The open ranges of `thread` joined by '/', step ranges left out; when that
  // thread has none open, the thread that opened the first step range stands in
  // (libtorch's backward threads open no ranges while the step thread waits in
  // backward()). Writes at most size-1 bytes plus NUL; returns the bytes written.
  // Allocation-free: CUPTI's launch callback calls it for the flight recorder.
  std::size_t copy_current_path(std::uint32_t thread, char* buf, std::size_t size) const;
  std::string current_path(std::uint32_t thread) const;

  // Ranges closed since the last call, as TraceEvent ranges (source host_recorder).
  std::vector<TraceEvent> take_completed();
  // Ranges still open, closed at `now()` (for a final flush at exit).
  std::vector<TraceEvent> snapshot_open() const;

  TraceCounters counters() const;       // ranges_dropped
  std::uint64_t unbalanced_pops() const;  // pop() with nothing open on that thread

 private:
  struct Open {
    std::string name;
    std::uint64_t start_ns;
    bool is_step;
  };
  struct ThreadStack {
    std::vector<Open> open;
    std::size_t overflow = 0;  // pushes refused at kMaxRangeDepth, matched by pops
  };

  mutable std::mutex mu_;
  ClockFn clock_;
  std::size_t cap_;
  std::unordered_map<std::uint32_t, ThreadStack> stacks_;
  std::optional<std::uint32_t> primary_;
  std::vector<TraceEvent> completed_;
  std::uint64_t dropped_ = 0;
  std::uint64_t unbalanced_ = 0;
};

// RAII push/pop on a recorder; a null recorder makes it a no-op.
class ScopedRecordedRange {
 public:
  ScopedRecordedRange(RangeRecorder* rec, std::string_view name) : rec_(rec) {
    if (rec_) rec_->push(name);
  }
  ~ScopedRecordedRange() {
    if (rec_) rec_->pop();
  }
  ScopedRecordedRange(const ScopedRecordedRange&) = delete;
  ScopedRecordedRange& operator=(const ScopedRecordedRange&) = delete;

 private:
  RangeRecorder* rec_;
};

}  // namespace harness::trace
