#pragma once
// What the trace processor concludes (plain values; writers only render them).
// JSON field names are what results.json's cell "extra.trace" carries.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/trace/trace_event.h"

namespace harness::trace {

// One row of the per-kernel table.
struct KernelRow {
  std::string name;          // as CUPTI reported it (usually mangled)
  std::string display_name;  // demangled when possible
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
  double mean_ns = 0.0;
  double share = 0.0;        // total_ns / all kernels' total_ns, in [0, 1]
};

// GPU time of the kernels whose launch happened inside this phase (innermost
// enclosing host range, step ranges left out of the path: "forward/layer 0").
struct PhaseRow {
  std::string path;
  std::uint64_t kernels = 0;
  std::uint64_t gpu_ns = 0;  // exclusive: kernels launched in a nested range count there
  double share = 0.0;
};

// Host syncs seen while one step range was open.
struct StepSyncs {
  int step = -1;             // -1: outside every step range
  int stream_syncs = 0;
  int device_syncs = 0;
  int event_syncs = 0;
  int dtoh_copies = 0;       // every device→host copy
  int dtoh_blocking = 0;     // ...of which the host waited for (not async)
  // What StepRecord::host_syncs carries: explicit syncs + blocking DtoH copies
  // (an async DtoH followed by cudaStreamSynchronize counts once, as the sync).
  int host_syncs() const { return stream_syncs + device_syncs + event_syncs + dtoh_blocking; }
};

struct CorrelationStats {
  std::uint64_t kernels_correlated = 0;        // kernel ↔ its launch API call
  std::uint64_t kernels_uncorrelated = 0;      // no API record with that correlation id
  std::uint64_t kernels_via_step_thread = 0;   // launched off the step thread with no open range
  std::uint64_t launches_without_kernel = 0;   // launch API seen, kernel never completed/recorded
  std::uint64_t markers_paired = 0;
  std::uint64_t markers_unpaired = 0;          // a start without end or an end without start
};

struct TraceSummary {
  std::vector<KernelRow> kernels;  // by total_ns descending, then name
  std::uint64_t kernel_ns = 0;
  std::uint64_t kernel_count = 0;
  std::vector<PhaseRow> phases;    // by gpu_ns descending, then path
  std::vector<StepSyncs> steps;    // by step ascending
  StepSyncs outside_steps;         // step == -1
  RangeSource range_source = RangeSource::none;
  std::uint64_t ranges_used = 0;
  CorrelationStats correlation;
  TraceCounters counters;
  bool truncated = false;
};

void to_json(nlohmann::json& j, const KernelRow& r);
void to_json(nlohmann::json& j, const PhaseRow& r);
void to_json(nlohmann::json& j, const StepSyncs& s);
void to_json(nlohmann::json& j, const CorrelationStats& c);
void to_json(nlohmann::json& j, const TraceCounters& c);
void to_json(nlohmann::json& j, const TraceSummary& s);

}  // namespace harness::trace
