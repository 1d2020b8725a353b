#include "harness/trace/trace_summary.h"

namespace harness::trace {

void to_json(nlohmann::json& j, const KernelRow& r) {
  j = {{"name", r.name},       {"display_name", r.display_name}, {"count", r.count},
       {"total_ns", r.total_ns}, {"mean_ns", r.mean_ns},         {"min_ns", r.min_ns},
       {"max_ns", r.max_ns},   {"share", r.share}};
}

void to_json(nlohmann::json& j, const PhaseRow& r) {
  j = {{"path", r.path}, {"kernels", r.kernels}, {"gpu_ns", r.gpu_ns}, {"share", r.share}};
}

void to_json(nlohmann::json& j, const StepSyncs& s) {
  j = {{"step", s.step},
       {"stream_syncs", s.stream_syncs},
       {"device_syncs", s.device_syncs},
       {"event_syncs", s.event_syncs},
       {"dtoh_copies", s.dtoh_copies},
       {"dtoh_blocking", s.dtoh_blocking},
       {"host_syncs", s.host_syncs()}};
}

void to_json(nlohmann::json& j, const CorrelationStats& c) {
  j = {{"kernels_correlated", c.kernels_correlated},
       {"kernels_uncorrelated", c.kernels_uncorrelated},
       {"kernels_via_step_thread", c.kernels_via_step_thread},
       {"launches_without_kernel", c.launches_without_kernel},
       {"markers_paired", c.markers_paired},
       {"markers_unpaired", c.markers_unpaired}};
}

void to_json(nlohmann::json& j, const TraceCounters& c) {
  j = nlohmann::json::object();
  for (const auto& f : TraceCounters::kFields) j[f.name] = c.*f.member;
  j["dropped"] = c.dropped();
  j["truncated"] = c.truncated();
}

void to_json(nlohmann::json& j, const TraceSummary& s) {
  j = {{"kernels", s.kernels},
       {"kernel_ns", s.kernel_ns},
       {"kernel_count", s.kernel_count},
       {"phases", s.phases},
       {"steps", s.steps},
       {"outside_steps", s.outside_steps},
       {"range_source", std::string(to_string(s.range_source))},
       {"ranges_used", s.ranges_used},
       {"correlation", s.correlation},
       {"counters", s.counters},
       {"truncated", s.truncated}};
}

}  // namespace harness::trace
