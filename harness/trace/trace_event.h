#pragma once
// The trace data model: one flat record per thing CUPTI (or our own range
// recorder) saw. Flat on purpose: tests build records by hand with the
// factories below, the CUPTI converter fills the same fields, and the
// processor and writer never need to know where a record came from.
//
// Times are nanoseconds on ONE clock: CUPTI's timestamp clock when CUPTI is on
// (cuptiGetTimestamp), the steady clock otherwise. Mixing clocks would
// misattribute every kernel, so the range recorder takes its clock from the
// tracer (range_recorder.h).
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/trace_summary.h"

namespace harness::trace {

enum class EventKind : std::uint8_t {
  kernel,   // a kernel on the GPU
  memcpy,   // a copy (DtoH is what matters for host syncs)
  memset,
  api,      // a CUDA runtime or driver API call on a host thread
  marker,   // a raw NVTX marker from CUPTI (start / end / instant), paired in pass 1
  range,    // a complete host range (our RangeRecorder, or a paired marker)
};

enum class CopyKind : std::uint8_t { unknown, htod, dtoh, dtod, htoh, peer };
enum class MemoryKind : std::uint8_t { unknown, pageable, pinned, device, array, managed };
enum class ApiDomain : std::uint8_t { runtime, driver };
enum class MarkerPhase : std::uint8_t { start, end, instant };
// RangeSource and TraceCounters are part of the summary every stage reads
// (core/trace_summary.h); the trace stage names them as its own.
using harness::RangeSource;
using harness::TraceCounters;

struct Dim3 {
  std::int32_t x = 1, y = 1, z = 1;
};

struct TraceEvent {
  EventKind kind = EventKind::kernel;
  std::string name;              // kernel / API / range name; memcpy: "Memcpy DtoH"
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;      // == start_ns for markers
  std::uint32_t correlation_id = 0;  // kernel, memcpy, memset, api; 0 = none
  std::uint32_t device = 0;      // GPU activities
  std::uint32_t stream = 0;
  // GPU activities: 0 = the stream's own track; k > 0 = its k-th overlap track,
  // for work that ran while earlier work on the stream was still running
  // (programmatic dependent launch lets a kernel start before its predecessor
  // ends). A track is a stack of nested slices; overlapping ones cannot share it.
  std::uint16_t lane = 0;
  std::uint32_t process = 0;     // host activities
  std::uint32_t thread = 0;      // host activities: CUPTI's thread id (see range_recorder.h)
  // kernel
  Dim3 grid, block;
  // memcpy / memset
  std::uint64_t bytes = 0;
  CopyKind copy_kind = CopyKind::unknown;
  MemoryKind src_kind = MemoryKind::unknown;
  MemoryKind dst_kind = MemoryKind::unknown;
  bool async = false;            // cudaMemcpyAsync & co: the host did not wait for it
  // api
  ApiDomain api_domain = ApiDomain::runtime;
  std::uint32_t api_cbid = 0;
  // marker / range
  std::uint64_t marker_id = 0;
  MarkerPhase marker_phase = MarkerPhase::instant;
  std::string domain;            // NVTX domain; empty = default domain
  RangeSource range_source = RangeSource::none;

  std::uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }

  // Factories for the common shapes (used by tests and by the converters).
  static TraceEvent make_kernel(std::string name, std::uint32_t device, std::uint32_t stream,
                                std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                Dim3 grid = {}, Dim3 block = {});
  static TraceEvent make_memcpy(CopyKind kind, std::uint64_t bytes, std::uint32_t device,
                                std::uint32_t stream, std::uint32_t correlation,
                                std::uint64_t start, std::uint64_t end, bool async);
  static TraceEvent make_memset(std::uint64_t bytes, std::uint32_t device, std::uint32_t stream,
                                std::uint32_t correlation, std::uint64_t start, std::uint64_t end);
  static TraceEvent make_api(std::string name, std::uint32_t correlation, std::uint32_t thread,
                             std::uint64_t start, std::uint64_t end,
                             ApiDomain domain = ApiDomain::runtime);
  static TraceEvent make_marker(MarkerPhase phase, std::uint64_t id, std::string name,
                                std::string domain, std::uint32_t thread, std::uint64_t at);
  static TraceEvent make_range(std::string name, std::uint32_t thread, std::uint64_t start,
                               std::uint64_t end, RangeSource source = RangeSource::host_recorder,
                               std::string domain = "nsa");
};

// Host-sync classification of an API name (runtime "cudaStreamSynchronize",
// CUPTI's versioned "cudaStreamSynchronize_v3020", per-thread "_ptsz", driver
// "cuStreamSynchronize").
enum class SyncKind : std::uint8_t { none, stream, device, event };
SyncKind classify_sync_api(std::string_view api_name);
// True for kernel-launch APIs (cudaLaunchKernel*, cuLaunchKernel*, __cudaLaunchKernel).
bool is_launch_api(std::string_view api_name);
// "cudaLaunchKernel_ptsz_v7000" → "cudaLaunchKernel": CUPTI's callback names carry a
// version and per-thread-stream suffix that reports should not show.
std::string strip_api_suffix(std::string_view api_name);
// Demangled C++ name when `name` is a mangled symbol, else `name` unchanged.
std::string demangle(const std::string& name);

std::string_view to_string(EventKind k);
std::string_view to_string(CopyKind k);

}  // namespace harness::trace
