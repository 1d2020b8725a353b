// Pass 2 of the trace processor (see trace_processor.h).
#include "harness/trace/trace_processor.h"

#include <algorithm>
#include <map>
#include <vector>

namespace harness::trace {
namespace {

bool inside_runtime_call(const CorrelationIndex& idx, std::uint32_t thread, std::uint64_t t) {
  auto it = idx.runtime_calls.find(thread);
  if (it == idx.runtime_calls.end()) return false;
  const auto& calls = it->second;
  auto pos = std::upper_bound(calls.begin(), calls.end(), std::make_pair(t, UINT64_MAX));
  if (pos == calls.begin()) return false;
  --pos;
  return pos->first <= t && t <= pos->second;
}

// The rows of a by-name table with their names and shares of all kernel
// time, most GPU time first (ties by name, so the order is stable).
template <class Row>
std::vector<Row> ranked(const std::map<std::string, Row>& by_name, std::string Row::*name, std::uint64_t Row::*ns,
                        std::uint64_t total_ns) {
  std::vector<Row> out;
  for (const auto& [key, row] : by_name) {
    out.push_back(row);
    out.back().*name = key;
    out.back().share = total_ns ? static_cast<double>(row.*ns) / total_ns : 0.0;
  }
  std::sort(out.begin(), out.end(),
            [&](const Row& a, const Row& b) { return a.*ns != b.*ns ? a.*ns > b.*ns : a.*name < b.*name; });
  return out;
}

class Pass2 {
 public:
  Pass2(const CorrelationIndex& idx, const ProcessorOptions& opt) : idx_(idx), opt_(opt) {}

  void kernel(const TraceEvent& e, TraceSummary& s) {
    const std::uint64_t d = e.duration_ns();
    KernelRow& row = kernels_[e.name];
    if (row.count == 0 || d < row.min_ns) row.min_ns = d;
    row.max_ns = std::max(row.max_ns, d);
    ++row.count;
    row.total_ns += d;
    ++s.kernel_count;
    s.kernel_ns += d;
    if (d > 0) intervals_.push_back({e.device, e.start_ns, e.end_ns});
    PhaseRow& phase = phases_[phase_of(e, s.correlation)];
    ++phase.kernels;
    phase.gpu_ns += d;
  }

  void api(const TraceEvent& e) {
    const SyncKind kind = classify_sync_api(e.name);
    if (kind == SyncKind::none) return;
    if (e.api_domain == ApiDomain::driver && inside_runtime_call(idx_, e.thread, e.start_ns)) {
      return;  // the runtime call around it is already counted
    }
    StepSyncs& s = step_for(e.start_ns);
    if (kind == SyncKind::stream) ++s.stream_syncs;
    if (kind == SyncKind::device) ++s.device_syncs;
    if (kind == SyncKind::event) ++s.event_syncs;
  }

  void memcpy(const TraceEvent& e) {
    if (e.copy_kind != CopyKind::dtoh) return;
    // Charge the copy to the step in which the host asked for it.
    const TraceEvent* launch = launch_of(e);
    StepSyncs& s = step_for(launch ? launch->start_ns : e.start_ns);
    ++s.dtoh_copies;
    if (!e.async) ++s.dtoh_blocking;
  }

  void finish(TraceSummary& s) {
    for (auto& [name, row] : kernels_) {
      row.display_name = demangle(name);
      row.mean_ns = static_cast<double>(row.total_ns) / static_cast<double>(row.count);
    }
    s.kernels = ranked(kernels_, &KernelRow::name, &KernelRow::total_ns, s.kernel_ns);
    s.kernel_busy_ns = busy_ns();
    s.phases = ranked(phases_, &PhaseRow::path, &PhaseRow::gpu_ns, s.kernel_ns);
    for (auto& [step, syncs] : steps_) {
      syncs.step = step;
      if (step < 0) {
        s.outside_steps = syncs;
      } else {
        s.steps.push_back(syncs);
      }
    }
    // Every step window appears, even one without a single sync: "0 syncs in
    // step 4" is a finding too.
    for (const HostRange& r : idx_.ranges.steps()) {
      if (steps_.count(*r.step) == 0) s.steps.push_back(StepSyncs{*r.step});
    }
    std::sort(s.steps.begin(), s.steps.end(),
              [](const StepSyncs& a, const StepSyncs& b) { return a.step < b.step; });
  }

 private:
  struct Interval {
    std::uint32_t device;
    std::uint64_t start, end;
  };

  // The union of the kernels' intervals per device (sorted, then merged where
  // one starts before the running one ends), summed over devices.
  std::uint64_t busy_ns() {
    std::sort(intervals_.begin(), intervals_.end(), [](const Interval& a, const Interval& b) {
      return a.device != b.device ? a.device < b.device : a.start < b.start;
    });
    std::uint64_t busy = 0;
    for (size_t i = 0; i < intervals_.size();) {
      const std::uint32_t device = intervals_[i].device;
      std::uint64_t start = intervals_[i].start, end = intervals_[i].end;
      for (++i; i < intervals_.size() && intervals_[i].device == device && intervals_[i].start < end; ++i)
        end = std::max(end, intervals_[i].end);
      busy += end - start;
    }
    return busy;
  }

  const TraceEvent* launch_of(const TraceEvent& e) const {
    auto it = idx_.api_by_correlation.find(e.correlation_id);
    return it == idx_.api_by_correlation.end() ? nullptr : it->second;
  }

  std::string phase_of(const TraceEvent& k, CorrelationStats& stats) const {
    const TraceEvent* launch = launch_of(k);
    if (launch == nullptr) {
      ++stats.kernels_uncorrelated;
      return opt_.uncorrelated_phase;
    }
    ++stats.kernels_correlated;
    if (const HostRange* r = idx_.ranges.innermost_phase(launch->thread, launch->start_ns)) {
      return r->path;
    }
    // libtorch runs backward on its own device threads, which open no ranges;
    // the step thread sits inside backward() meanwhile, so its open range is the
    // phase. Counted, so the report can say how much was attributed this way.
    auto step_thread = idx_.ranges.step_thread();
    if (step_thread && *step_thread != launch->thread &&
        idx_.ranges.innermost(launch->thread, launch->start_ns) == nullptr) {
      if (const HostRange* r = idx_.ranges.innermost_phase(*step_thread, launch->start_ns)) {
        ++stats.kernels_via_step_thread;
        return r->path;
      }
    }
    return opt_.no_range_phase;
  }

  StepSyncs& step_for(std::uint64_t t) { return steps_[idx_.ranges.step_at(t).value_or(-1)]; }

  const CorrelationIndex& idx_;
  const ProcessorOptions& opt_;
  std::map<std::string, KernelRow> kernels_;
  std::vector<Interval> intervals_;  // every kernel's [start, end), for the busy time
  std::map<std::string, PhaseRow> phases_;
  std::map<int, StepSyncs> steps_;
};

}  // namespace

TraceSummary process_trace(const std::vector<TraceEvent>& events, const TraceCounters& counters,
                           const ProcessorOptions& opt) {
  const CorrelationIndex idx = correlate(events, opt);  // pass 1
  TraceSummary s;
  s.range_source = idx.range_source;
  s.ranges_used = idx.ranges.size();
  s.correlation.markers_paired = idx.markers_paired;
  s.correlation.markers_unpaired = idx.markers_unpaired;
  Pass2 pass(idx, opt);
  for (const TraceEvent& e : events) {  // pass 2
    switch (e.kind) {
      case EventKind::kernel: pass.kernel(e, s); break;
      case EventKind::api: pass.api(e); break;
      case EventKind::memcpy: pass.memcpy(e); break;
      default: break;
    }
  }
  for (const auto& [corr, api] : idx.api_by_correlation) {
    if (is_launch_api(api->name) && idx.gpu_correlations.count(corr) == 0) {
      ++s.correlation.launches_without_kernel;
    }
  }
  pass.finish(s);
  s.counters = counters;
  s.truncated = counters.truncated();
  return s;
}

}  // namespace harness::trace
