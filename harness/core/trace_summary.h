#pragma once
// What the trace processor concludes about a cell's GPU work, as plain values:
// the child's CUPTI probe fills it, CellResult::trace carries it, the report
// renders it. It lives with the other records every stage speaks (the trace
// stage produces it; the supervisor, analysis and report only read it), with
// one (de)serializer per record: results.json's cell "trace" (hand-written ones
// declared in their record, defined in trace_summary.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness {

// Where a host range came from; the summary reports which one it used.
// gpu_projection: a host range redrawn on a stream's track (trace/gpu_projection.h).
enum class RangeSource : std::uint8_t { none, cupti_marker, host_recorder, gpu_projection };
std::string_view to_string(RangeSource s);
std::optional<RangeSource> range_source_from_string(std::string_view s);

// Counters of everything the tracing lost or refused: the report shows them and
// any non-zero `dropped` count marks the trace as truncated.
struct TraceCounters {
  std::uint64_t records_dropped_by_cupti = 0;   // CUPTI had no buffer (pool exhausted)
  std::uint64_t buffer_requests_refused = 0;    // buffer requests the bounded pool refused
  std::uint64_t events_dropped_store_full = 0;  // converted events over the pending cap
  std::uint64_t events_dropped_retained_full = 0;  // events over the whole-run cap
  std::uint64_t ranges_dropped = 0;             // host ranges over the recorder's cap
  std::uint64_t events_dropped_writer_behind = 0;  // trace-file batches over the writer's queue cap
  std::uint64_t records_ignored = 0;            // CUPTI record kinds we do not convert
  std::uint64_t tracing_errors = 0;             // failed CUPTI calls (tracing degraded)

  std::uint64_t dropped() const {
    return records_dropped_by_cupti + events_dropped_store_full + events_dropped_retained_full +
           ranges_dropped + events_dropped_writer_behind;
  }
  bool truncated() const { return dropped() > 0 || buffer_requests_refused > 0; }
  TraceCounters& operator+=(const TraceCounters& o);

  // Every counter with its name, in one place: sums, results.json and the
  // trace's truncation mark all walk this list.
  struct Field {
    const char* name;
    std::uint64_t TraceCounters::*member;
  };
  static const Field kFields[8];

  friend void to_json(nlohmann::json& j, const TraceCounters& v);
  friend void from_json(const nlohmann::json& j, TraceCounters& v);
};

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

  friend void to_json(nlohmann::json& j, const StepSyncs& v);
  friend void from_json(const nlohmann::json& j, StepSyncs& v);
};

struct CorrelationStats {
  std::uint64_t kernels_correlated = 0;        // kernel ↔ its launch API call
  std::uint64_t kernels_uncorrelated = 0;      // no API record with that correlation id
  std::uint64_t kernels_via_step_thread = 0;   // launched off the step thread with no open range
  std::uint64_t launches_without_kernel = 0;   // launch API seen, kernel never completed/recorded
  std::uint64_t markers_paired = 0;
  std::uint64_t markers_unpaired = 0;          // a start without end or an end without start
};

// The timeline file the child wrote beside the summary (trace.json.gz).
struct TraceFile {
  double budget_mb = 0.0;
  std::uint64_t bytes = 0;
  std::uint64_t events_over_budget = 0;  // events left out of the file once it reached its budget
};

struct TraceSummary {
  std::vector<KernelRow> kernels;  // by total_ns descending, then name
  std::uint64_t kernel_ns = 0;
  // Time at least one kernel ran (the union of the kernels' intervals, per
  // device, summed over devices). Kernels on several streams overlap, so this
  // is at most kernel_ns; GPU-busy is this over the traced steps' wall time.
  std::uint64_t kernel_busy_ns = 0;
  std::uint64_t kernel_count = 0;
  std::vector<PhaseRow> phases;    // by gpu_ns descending, then path
  std::vector<StepSyncs> steps;    // by step ascending
  StepSyncs outside_steps;         // step == -1
  RangeSource range_source = RangeSource::none;
  std::uint64_t ranges_used = 0;
  CorrelationStats correlation;
  TraceCounters counters;
  bool truncated = false;
  // Set by the child's CUPTI probe, not the processor: which steps CUPTI traced
  // (`cupti: {every: N}`; 1 = all) and the timeline file it wrote.
  int trace_every = 1;
  std::vector<int> traced_steps;
  std::optional<TraceFile> file;

  friend void to_json(nlohmann::json& j, const TraceSummary& v);
  friend void from_json(const nlohmann::json& j, TraceSummary& v);
};

// One (de)serializer per record; a key absent from the JSON keeps the field's
// default. StepSyncs writes its derived host_syncs too, for people reading the
// file; reading ignores it. TraceCounters writes its derived dropped/truncated.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelRow, name, display_name, count, total_ns, mean_ns, min_ns, max_ns,
                                                share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PhaseRow, path, kernels, gpu_ns, share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CorrelationStats, kernels_correlated, kernels_uncorrelated,
                                                kernels_via_step_thread, launches_without_kernel, markers_paired,
                                                markers_unpaired)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TraceFile, budget_mb, bytes, events_over_budget)
}  // namespace harness
