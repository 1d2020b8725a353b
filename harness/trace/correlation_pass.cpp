// Pass 1 of the trace processor (see trace_processor.h).
#include <algorithm>
#include <map>

#include "harness/trace/trace_processor.h"

namespace harness::trace {
namespace {

struct OpenMarker {
  const TraceEvent* start;
};

// Pairs CUPTI start/end markers by marker id. Instant markers carry no duration
// and are not phases, so they are skipped here (the trace writer still draws them).
std::vector<HostRange> pair_markers(const std::vector<TraceEvent>& events,
                                    const ProcessorOptions& opt, CorrelationIndex& idx) {
  std::vector<HostRange> out;
  std::map<std::uint64_t, OpenMarker> open;
  for (const TraceEvent& e : events) {
    if (e.kind != EventKind::marker) continue;
    if (e.marker_phase == MarkerPhase::start) {
      if (!opt.marker_domain.empty() && e.domain != opt.marker_domain) continue;
      open[e.marker_id] = {&e};
    } else if (e.marker_phase == MarkerPhase::end) {
      // End markers carry no name or domain (CUPTI leaves them NULL): match by id.
      auto it = open.find(e.marker_id);
      if (it == open.end()) {
        if (opt.marker_domain.empty() || e.domain == opt.marker_domain) ++idx.markers_unpaired;
        continue;
      }
      const TraceEvent& s = *it->second.start;
      out.push_back({s.name, s.thread, s.start_ns, e.start_ns});
      open.erase(it);
      ++idx.markers_paired;
    }
  }
  idx.markers_unpaired += open.size();
  return out;
}

}  // namespace

CorrelationIndex correlate(const std::vector<TraceEvent>& events, const ProcessorOptions& opt) {
  CorrelationIndex idx;
  std::vector<HostRange> recorded;
  std::vector<HostRange> from_markers = pair_markers(events, opt, idx);
  for (const TraceEvent& e : events) {
    switch (e.kind) {
      case EventKind::api: {
        if (e.correlation_id != 0) {
          // With both API domains on, a runtime call and the driver call inside
          // it may share a correlation id; the runtime call is what user code made.
          auto [it, inserted] = idx.api_by_correlation.emplace(e.correlation_id, &e);
          if (!inserted && it->second->api_domain == ApiDomain::driver &&
              e.api_domain == ApiDomain::runtime) {
            it->second = &e;
          }
        }
        if (e.api_domain == ApiDomain::runtime) {
          idx.runtime_calls[e.thread].emplace_back(e.start_ns, e.end_ns);
        }
        break;
      }
      case EventKind::kernel:
      case EventKind::memcpy:
      case EventKind::memset:
        if (e.correlation_id != 0) idx.gpu_correlations.insert(e.correlation_id);
        break;
      case EventKind::range:
        if (e.range_source == RangeSource::gpu_projection) break;  // a drawing aid, not a host range
        if (e.range_source == RangeSource::cupti_marker) {
          from_markers.push_back({e.name, e.thread, e.start_ns, e.end_ns});
        } else {
          recorded.push_back({e.name, e.thread, e.start_ns, e.end_ns});
        }
        break;
      case EventKind::marker:
        break;  // paired above
    }
  }
  for (auto& [thread, calls] : idx.runtime_calls) std::sort(calls.begin(), calls.end());

  // CUPTI markers win when present: they are what NVTX itself saw. Our recorder
  // is the fallback for runs where NVTX never reached CUPTI.
  if (!from_markers.empty()) {
    idx.range_source = RangeSource::cupti_marker;
    idx.ranges.build(std::move(from_markers));
  } else if (!recorded.empty()) {
    idx.range_source = RangeSource::host_recorder;
    idx.ranges.build(std::move(recorded));
  }
  return idx;
}

}  // namespace harness::trace
