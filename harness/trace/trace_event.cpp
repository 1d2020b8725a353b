#include "harness/trace/trace_event.h"

#include "harness/core/enum_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <utility>

namespace harness::trace {

namespace {
// What every record carries: its kind, name and interval.
TraceEvent event(EventKind kind, std::string name, std::uint64_t start, std::uint64_t end) {
  TraceEvent e;
  e.kind = kind;
  e.name = std::move(name);
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

// A device-side record: where it ran, and the API call that launched it.
TraceEvent device_event(EventKind kind, std::string name, std::uint32_t device, std::uint32_t stream,
                        std::uint32_t correlation, std::uint64_t start, std::uint64_t end) {
  TraceEvent e = event(kind, std::move(name), start, end);
  e.device = device;
  e.stream = stream;
  e.correlation_id = correlation;
  return e;
}

// A host-side record: the thread it happened on.
TraceEvent host_event(EventKind kind, std::string name, std::uint32_t thread, std::uint64_t start,
                      std::uint64_t end) {
  TraceEvent e = event(kind, std::move(name), start, end);
  e.thread = thread;
  return e;
}
}  // namespace

TraceEvent TraceEvent::make_kernel(std::string name, std::uint32_t device, std::uint32_t stream,
                                   std::uint32_t correlation, std::uint64_t start,
                                   std::uint64_t end, Dim3 grid, Dim3 block) {
  TraceEvent e = device_event(EventKind::kernel, std::move(name), device, stream, correlation, start, end);
  e.grid = grid;
  e.block = block;
  return e;
}

TraceEvent TraceEvent::make_memcpy(CopyKind kind, std::uint64_t bytes, std::uint32_t device,
                                   std::uint32_t stream, std::uint32_t correlation,
                                   std::uint64_t start, std::uint64_t end, bool async) {
  TraceEvent e = device_event(EventKind::memcpy, "Memcpy " + std::string(to_string(kind)), device, stream,
                              correlation, start, end);
  e.copy_kind = kind;
  e.bytes = bytes;
  e.async = async;
  switch (kind) {  // the usual memory kinds; the CUPTI converter overwrites them
    case CopyKind::dtoh: e.src_kind = MemoryKind::device; e.dst_kind = MemoryKind::pageable; break;
    case CopyKind::htod: e.src_kind = MemoryKind::pageable; e.dst_kind = MemoryKind::device; break;
    case CopyKind::dtod: e.src_kind = e.dst_kind = MemoryKind::device; break;
    default: break;
  }
  return e;
}

TraceEvent TraceEvent::make_memset(std::uint64_t bytes, std::uint32_t device, std::uint32_t stream,
                                   std::uint32_t correlation, std::uint64_t start,
                                   std::uint64_t end) {
  TraceEvent e = device_event(EventKind::memset, "Memset", device, stream, correlation, start, end);
  e.bytes = bytes;
  return e;
}

TraceEvent TraceEvent::make_api(std::string name, std::uint32_t correlation, std::uint32_t thread,
                                std::uint64_t start, std::uint64_t end, ApiDomain domain) {
  TraceEvent e = host_event(EventKind::api, std::move(name), thread, start, end);
  e.correlation_id = correlation;
  e.api_domain = domain;
  return e;
}

TraceEvent TraceEvent::make_marker(MarkerPhase phase, std::uint64_t id, std::string name,
                                   std::string domain, std::uint32_t thread, std::uint64_t at) {
  TraceEvent e = host_event(EventKind::marker, std::move(name), thread, at, at);
  e.marker_phase = phase;
  e.marker_id = id;
  e.domain = std::move(domain);
  e.range_source = RangeSource::cupti_marker;
  return e;
}

TraceEvent TraceEvent::make_range(std::string name, std::uint32_t thread, std::uint64_t start,
                                  std::uint64_t end, RangeSource source, std::string domain) {
  TraceEvent e = host_event(EventKind::range, std::move(name), thread, start, end);
  e.range_source = source;
  e.domain = std::move(domain);
  return e;
}

std::string strip_api_suffix(std::string_view name) {
  // CUPTI: "<api>[_ptsz|_ptds][_vNNNN]"; strip the version first, then the stream suffix.
  auto v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      name.find_first_not_of("0123456789", v + 2) == std::string_view::npos) {
    name = name.substr(0, v);
  }
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name = name.substr(0, name.size() - suffix.size());
    }
  }
  return std::string(name);
}

SyncKind classify_sync_api(std::string_view api_name) {
  const std::string n = strip_api_suffix(api_name);
  if (n == "cudaStreamSynchronize" || n == "cuStreamSynchronize") return SyncKind::stream;
  if (n == "cudaDeviceSynchronize" || n == "cudaThreadSynchronize" || n == "cuCtxSynchronize")
    return SyncKind::device;
  if (n == "cudaEventSynchronize" || n == "cuEventSynchronize") return SyncKind::event;
  return SyncKind::none;
}

bool is_launch_api(std::string_view api_name) {
  const std::string n = strip_api_suffix(api_name);
  return n.rfind("cudaLaunch", 0) == 0 || n.rfind("__cudaLaunch", 0) == 0 ||
         n.rfind("cuLaunch", 0) == 0;
}

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

namespace {
constexpr EnumName<EventKind> kEventKinds[] = {
    {EventKind::kernel, "kernel"}, {EventKind::memcpy, "memcpy"}, {EventKind::memset, "memset"},
    {EventKind::api, "api"},       {EventKind::marker, "marker"}, {EventKind::range, "range"}};
constexpr EnumName<CopyKind> kCopyKinds[] = {
    {CopyKind::unknown, "unknown"}, {CopyKind::htod, "HtoD"}, {CopyKind::dtoh, "DtoH"},
    {CopyKind::dtod, "DtoD"},       {CopyKind::htoh, "HtoH"}, {CopyKind::peer, "PtoP"}};
}  // namespace

std::string_view to_string(EventKind k) { return name_in(kEventKinds, k); }
std::string_view to_string(CopyKind k) { return name_in(kCopyKinds, k); }

}  // namespace harness::trace
