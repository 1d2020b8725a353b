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
  // Per track: outermost first (start ascending, end descending), then keep
  // only slices that nest in the stack of slices still open.
  std::sort(out.begin(), out.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::tie(a.device, a.stream, a.start_ns, b.end_ns) < std::tie(b.device, b.stream, b.start_ns, a.end_ns);
  });
  std::vector<TraceEvent> kept;
  std::vector<size_t> open;  // indices into kept
  for (const auto& p : out) {
    if (!open.empty() && (kept[open.back()].device != p.device || kept[open.back()].stream != p.stream))
      open.clear();
    while (!open.empty() && kept[open.back()].end_ns <= p.start_ns) open.pop_back();
    if (!open.empty() && p.end_ns > kept[open.back()].end_ns) continue;  // partial overlap: not a tree
    kept.push_back(p);
    open.push_back(kept.size() - 1);
  }
  return kept;
}

}  // namespace harness::trace
