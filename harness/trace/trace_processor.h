#pragma once
// The trace processor, in two documented passes (kineto's shape):
//
//   Pass 1 — correlations. Index every API call by correlation id (so a kernel,
//     memcpy or memset finds the host call that launched it), pair CUPTI NVTX
//     start/end markers into ranges by marker id, choose the range source
//     (CUPTI markers when any arrived, else our RangeRecorder's ranges), and
//     build the per-thread range index and the step windows.
//   Pass 2 — events. Walk every record once: per-kernel table, GPU time per
//     phase (a kernel is charged to the innermost host range enclosing its
//     launching API call on the launching thread), host syncs per step.
//
// Both passes are pure functions of the records: CPU tests feed hand-built
// records through exactly the code the GPU run uses.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "harness/trace/range_index.h"
#include "harness/trace/trace_event.h"
#include "harness/core/trace_summary.h"

namespace harness::trace {

struct ProcessorOptions {
  // Only CUPTI markers of this NVTX domain become ranges ("" = every domain):
  // libraries that emit their own NVTX (cuDNN, NCCL) must not split our phases.
  std::string marker_domain = "nsa";
  // Phase name for kernels whose launch had no enclosing range, and for kernels
  // with no launch record at all.
  std::string no_range_phase = "<no range>";
  std::string uncorrelated_phase = "<uncorrelated>";
};

// Pass 1's output; kept as a value so tests can look at it directly.
struct CorrelationIndex {
  std::unordered_map<std::uint32_t, const TraceEvent*> api_by_correlation;
  std::unordered_set<std::uint32_t> gpu_correlations;  // correlation ids that reached the GPU
  // Runtime API calls per thread, sorted by start: a driver call inside one is
  // the runtime's own implementation and must not count twice as a sync.
  std::unordered_map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>
      runtime_calls;
  RangeIndex ranges;
  RangeSource range_source = RangeSource::none;
  std::uint64_t markers_paired = 0;
  std::uint64_t markers_unpaired = 0;
};

// Pass 1.
CorrelationIndex correlate(const std::vector<TraceEvent>& events, const ProcessorOptions& opt = {});

// Pass 1 + pass 2. `events` must outlive nothing: the summary owns its data.
TraceSummary process_trace(const std::vector<TraceEvent>& events,
                           const TraceCounters& counters = {},
                           const ProcessorOptions& opt = {});

}  // namespace harness::trace
