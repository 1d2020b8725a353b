#include "harness/trace/event_store.h"

#include <iterator>
#include <utility>

namespace harness::trace {

bool EventStore::add(TraceEvent e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= cap_) {
    ++counters_.events_dropped_store_full;
    return false;
  }
  events_.push_back(std::move(e));
  return true;
}

std::vector<TraceEvent> EventStore::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceEvent> out;
  out.swap(events_);
  return out;
}

void EventStore::count(const TraceCounters& more) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_ += more;
}

TraceCounters EventStore::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

std::size_t EventStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

void RetainedTrace::append(std::vector<TraceEvent> more) {
  const std::size_t room = events.size() < cap ? cap - events.size() : 0;
  const std::size_t keep = more.size() < room ? more.size() : room;
  counters.events_dropped_retained_full += more.size() - keep;
  events.insert(events.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.begin() + static_cast<std::ptrdiff_t>(keep)));
}

}  // namespace harness::trace
