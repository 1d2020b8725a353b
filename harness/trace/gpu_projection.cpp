#include "harness/trace/gpu_projection.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace harness::trace {
namespace {

struct Span {
  std::uint64_t start = UINT64_MAX, end = 0;
};

bool is_gpu(const TraceEvent& e) {
  return e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset;
}

bool is_host_range(const TraceEvent& e) {
  return e.kind == EventKind::range && e.range_source != RangeSource::gpu_projection;
}

}  // namespace

std::vector<TraceEvent> project_ranges_onto_gpu(const std::vector<TraceEvent>& events) {
  // When each GPU activity was launched: its API call's start, by correlation id.
  std::unordered_map<std::uint32_t, std::uint64_t> launched_at;
  for (const auto& e : events)
    if (e.kind == EventKind::api && e.correlation_id != 0) launched_at[e.correlation_id] = e.start_ns;

  // Ranges by start, so each launch finds the ranges open at its time.
  std::vector<const TraceEvent*> ranges;
  for (const auto& e : events)
    if (is_host_range(e) && e.end_ns > e.start_ns) ranges.push_back(&e);
  std::sort(ranges.begin(), ranges.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });

  // (range index, device, stream) → span of its GPU work.
  std::map<std::tuple<size_t, std::uint32_t, std::uint32_t>, Span> spans;
  for (const auto& g : events) {
    if (!is_gpu(g)) continue;
    auto it = launched_at.find(g.correlation_id);
    if (it == launched_at.end()) continue;
    const std::uint64_t t = it->second;
    for (size_t i = 0; i < ranges.size() && ranges[i]->start_ns <= t; ++i) {
      if (t > ranges[i]->end_ns) continue;
      Span& s = spans[{i, g.device, g.stream}];
      s.start = std::min(s.start, g.start_ns);
      s.end = std::max(s.end, g.end_ns);
    }
  }

  std::vector<TraceEvent> out;
  for (const auto& [key, span] : spans) {
    const auto& [i, device, stream] = key;
    TraceEvent p = *ranges[i];
    p.range_source = RangeSource::gpu_projection;
    p.device = device;
    p.stream = stream;
    p.start_ns = span.start;
    p.end_ns = span.end;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<TraceEvent> lay_out_gpu_tracks(std::vector<TraceEvent> events) {
  std::vector<TraceEvent> projected = project_ranges_onto_gpu(events);
  // Every slice of the stream tracks: projections (parents) and activities (leaves).
  struct Slice {
    std::uint64_t start, end;
    bool projection;
    size_t index;  // into `projected` or `events`
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Slice>> tracks;
  for (size_t i = 0; i < projected.size(); ++i)
    tracks[{projected[i].device, projected[i].stream}].push_back({projected[i].start_ns, projected[i].end_ns, true, i});
  for (size_t i = 0; i < events.size(); ++i)
    if (is_gpu(events[i])) tracks[{events[i].device, events[i].stream}].push_back({events[i].start_ns, events[i].end_ns, false, i});

  std::vector<bool> keep(projected.size(), true);
  for (auto& [track, slices] : tracks) {
    // Outermost first: start ascending, end descending, parents before leaves.
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.end != b.end) return a.end > b.end;
      return a.projection && !b.projection;
    });
    std::vector<const Slice*> open;          // lane 0's stack of open slices
    std::vector<std::uint64_t> lane_end;     // overlap lanes 1..: end of their last slice
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      // A leaf on top means s starts while that activity still runs; a parent
      // on top that ends before s ends would be cut across.
      const bool fits = open.empty() || (open.back()->projection && s.end <= open.back()->end);
      if (fits) {
        open.push_back(&s);
        continue;
      }
      if (s.projection) {
        keep[s.index] = false;
        continue;
      }
      size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > s.start) ++lane;
      if (lane == lane_end.size()) lane_end.push_back(0);
      lane_end[lane] = s.end;
      events[s.index].lane = static_cast<std::uint16_t>(lane + 1);
    }
  }
  std::vector<TraceEvent> out;
  for (size_t i = 0; i < projected.size(); ++i)
    if (keep[i]) out.push_back(std::move(projected[i]));
  std::stable_sort(out.begin(), out.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns > b.end_ns);
  });
  for (auto& e : events) out.push_back(std::move(e));
  return out;
}

}  // namespace harness::trace
