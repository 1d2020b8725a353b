#pragma once
// Bounded holding areas for converted trace events. Two caps, two jobs:
//  - EventStore: events converted since the last take() (between two step-end
//    flushes). CUPTI's completion callback appends from its own thread while the
//    training thread takes, hence the mutex.
//  - RetainedTrace: what the child keeps for the end-of-run processor.
// Over either cap, events are dropped and counted — never blocking, never growing
// without bound (a runaway launch loop must not take the child down with it).
#include <cstddef>
#include <mutex>
#include <vector>

#include "harness/trace/trace_event.h"

namespace harness::trace {

// Why 1 << 20: one step of m7c_125m is a few thousand kernels plus as many API
// records (~10k events); a million covers ~100 steps between flushes with room
// for a pathological step, at ~200 MB worst case (record + name).
inline constexpr std::size_t kMaxPendingEvents = std::size_t{1} << 20;
// Why 1 << 21: the processor needs the whole run in memory; two million events
// (~400 MB worst case) is a few hundred m7c_125m steps, more than any scenario
// traces. Longer runs keep their first events and report the rest as dropped.
inline constexpr std::size_t kMaxRetainedEvents = std::size_t{1} << 21;

class EventStore {
 public:
  explicit EventStore(std::size_t cap = kMaxPendingEvents) : cap_(cap) {}

  // False (and counted) when the store is full.
  bool add(TraceEvent e);
  // Everything added since the last take, oldest first.
  std::vector<TraceEvent> take();
  // Counters owned by the tracing side (CUPTI drops, refused buffers, errors).
  void count(const TraceCounters& more);
  TraceCounters counters() const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::size_t cap_;
  std::vector<TraceEvent> events_;
  TraceCounters counters_;
};

// The whole run's events, capped; counters accumulate from every flush.
struct RetainedTrace {
  std::vector<TraceEvent> events;
  TraceCounters counters;
  std::size_t cap = kMaxRetainedEvents;

  // Appends up to the cap; the rest is counted in events_dropped_retained_full.
  void append(std::vector<TraceEvent> more);
};

}  // namespace harness::trace
