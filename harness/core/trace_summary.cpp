#include "harness/core/trace_summary.h"

#include <stdexcept>

#include "harness/core/enum_names.h"

namespace harness {
using nlohmann::json;

namespace {
constexpr EnumName<RangeSource> kRangeSources[] = {
    {RangeSource::none, "none"}, {RangeSource::cupti_marker, "cupti_marker"},
    {RangeSource::host_recorder, "host_recorder"}, {RangeSource::gpu_projection, "gpu_projection"}};
}  // namespace

std::string_view to_string(RangeSource s) { return name_in(kRangeSources, s); }
std::optional<RangeSource> range_source_from_string(std::string_view s) { return value_in(kRangeSources, s); }

const TraceCounters::Field TraceCounters::kFields[8] = {
    {"records_dropped_by_cupti", &TraceCounters::records_dropped_by_cupti},
    {"buffer_requests_refused", &TraceCounters::buffer_requests_refused},
    {"events_dropped_store_full", &TraceCounters::events_dropped_store_full},
    {"events_dropped_retained_full", &TraceCounters::events_dropped_retained_full},
    {"ranges_dropped", &TraceCounters::ranges_dropped},
    {"events_dropped_writer_behind", &TraceCounters::events_dropped_writer_behind},
    {"records_ignored", &TraceCounters::records_ignored},
    {"tracing_errors", &TraceCounters::tracing_errors},
};

TraceCounters& TraceCounters::operator+=(const TraceCounters& o) {
  for (const auto& f : kFields) this->*f.member += o.*f.member;
  return *this;
}

void to_json(json& j, const TraceCounters& c) {
  j = json::object();
  for (const auto& f : TraceCounters::kFields) j[f.name] = c.*f.member;
  j["dropped"] = c.dropped();
  j["truncated"] = c.truncated();
}
void from_json(const json& j, TraceCounters& c) {
  for (const auto& f : TraceCounters::kFields) c.*f.member = j.value(f.name, std::uint64_t{0});
}

// A step's counts, listed once for writing and reading.
template <class S, class Visit>
void visit_step_syncs(S& s, Visit&& visit) {
  visit("step", s.step), visit("stream_syncs", s.stream_syncs), visit("device_syncs", s.device_syncs);
  visit("event_syncs", s.event_syncs), visit("dtoh_copies", s.dtoh_copies), visit("dtoh_blocking", s.dtoh_blocking);
}
void to_json(json& j, const StepSyncs& s) {
  j = json::object();
  visit_step_syncs(s, [&j](const char* key, int v) { j[key] = v; });
  j["host_syncs"] = s.host_syncs();  // derived, for a person reading the file; not read back
}
void from_json(const json& j, StepSyncs& s) {
  s = StepSyncs{};
  visit_step_syncs(s, [&j](const char* key, int& v) { v = j.value(key, v); });
}

void to_json(json& j, const TraceSummary& s) {
  j = {{"kernels", s.kernels},
       {"kernel_ns", s.kernel_ns},
       {"kernel_busy_ns", s.kernel_busy_ns},
       {"kernel_count", s.kernel_count},
       {"phases", s.phases},
       {"steps", s.steps},
       {"outside_steps", s.outside_steps},
       {"range_source", std::string(to_string(s.range_source))},
       {"ranges_used", s.ranges_used},
       {"correlation", s.correlation},
       {"counters", s.counters},
       {"truncated", s.truncated},
       {"trace_every", s.trace_every},
       {"traced_steps", s.traced_steps}};
  if (s.file) j["file"] = *s.file;
}
void from_json(const json& j, TraceSummary& s) {
  s.kernels = j.value("kernels", std::vector<KernelRow>{});
  s.kernel_ns = j.value("kernel_ns", std::uint64_t{0});
  s.kernel_busy_ns = j.value("kernel_busy_ns", std::uint64_t{0});
  s.kernel_count = j.value("kernel_count", std::uint64_t{0});
  s.phases = j.value("phases", std::vector<PhaseRow>{});
  s.steps = j.value("steps", std::vector<StepSyncs>{});
  s.outside_steps = j.value("outside_steps", StepSyncs{});
  const std::string source = j.value("range_source", "none");
  auto rs = range_source_from_string(source);
  if (!rs) throw std::runtime_error("unknown trace range_source '" + source + "'");
  s.range_source = *rs;
  s.ranges_used = j.value("ranges_used", std::uint64_t{0});
  s.correlation = j.value("correlation", CorrelationStats{});
  s.counters = j.value("counters", TraceCounters{});
  s.truncated = j.value("truncated", false);
  s.trace_every = j.value("trace_every", 1);
  s.traced_steps = j.value("traced_steps", std::vector<int>{});
  if (j.contains("file") && j.at("file").is_object()) s.file = j.at("file").get<TraceFile>(); else s.file.reset();
}

}  // namespace harness
