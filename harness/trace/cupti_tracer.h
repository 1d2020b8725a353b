#pragma once
// CUPTI activity tracing behind a small CUPTI-free interface (harness_cupti is
// the only target that includes <cupti.h>; code using the tracer does not).
//
// What it enables: CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, MARKER (NVTX; needs
// NVTX_INJECTION64_PATH, see README), optionally DRIVER. Buffers come from a
// bounded ActivityBufferPool; records CUPTI drops for want of a buffer are
// counted. A runtime-API callback on kernel launches feeds the FlightRecorder at
// launch time, so the last launched kernel is known even if it never completes.
//
// Failure policy: every CUPTI call goes through NSA_CUPTI_CALL (call text,
// file:line). A failure is logged to stderr once per call site, counted in
// TraceCounters::tracing_errors and kept in errors(); tracing degrades, the run
// goes on. Nothing here throws into the run.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/trace/buffer_pool.h"
#include "harness/trace/event_store.h"
#include "harness/trace/flight_recorder.h"
#include "harness/trace/range_recorder.h"
#include "harness/trace/trace_event.h"

namespace harness::trace {

struct CuptiTracerOptions {
  bool runtime_api = true;
  bool driver_api = false;  // doubles the API records (runtime calls the driver); off unless asked
  bool memcpy = true;
  bool memset = true;
  bool markers = true;
  std::size_t max_buffers = kMaxActivityBuffers;
  std::size_t buffer_bytes = kActivityBufferBytes;
  std::size_t max_pending_events = kMaxPendingEvents;
  FlightRecorder* flight = nullptr;  // fed at every kernel launch; not owned
  RangeRecorder* ranges = nullptr;   // gets CUPTI's clock; gives NVTX paths to flight entries
};

// Why 64: distinct failing CUPTI calls kept verbatim for the report; a broken
// setup repeats the same few, and the counter keeps the total.
inline constexpr std::size_t kMaxTracingErrors = 64;

class CuptiTracer {
 public:
  explicit CuptiTracer(CuptiTracerOptions opt = {});
  ~CuptiTracer();  // stop(); never throws
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Registers callbacks and enables the activity kinds. False when CUPTI is not
  // usable here (no driver, another tracer active, a profiler attached); the
  // reason is in errors(). Only one tracer may be active per process: CUPTI's
  // buffer callbacks carry no user pointer.
  bool start();
  // Disables the kinds, force-flushes what is left, unsubscribes. Idempotent.
  void stop();
  // Delivers completed buffers (cuptiActivityFlushAll(0)); call at step ends,
  // after the step's own synchronisation. `forced` also delivers buffers with
  // records still in flight (used by stop()).
  void flush(bool forced = false);

  // Switches the activity records (kernels, API calls, copies, markers) off and
  // on again without touching the launch callback: the flight recorder keeps
  // seeing every launch while steps that are not traced save the records'
  // per-launch cost. Records made before switching off stay until flushed.
  void set_recording(bool on);
  bool recording() const { return active_ && recording_; }
  // Switches the launch callback (the flight recorder's feed) off and on again.
  // Only for measuring: a step without it is a step nobody could name a hung
  // kernel in.
  void set_launch_callbacks(bool on);

  // Events converted since the last call (records from buffers CUPTI completed).
  std::vector<TraceEvent> take_events();
  TraceCounters counters() const;
  std::vector<std::string> errors() const;
  bool active() const { return active_; }

  // CUPTI's clock (cuptiGetTimestamp); the steady clock if CUPTI cannot answer.
  static std::uint64_t timestamp_ns();

  // Used by the C trampolines in cupti_tracer.cpp; not for callers.
  struct Impl;

 private:
  CuptiTracerOptions opt_;
  std::unique_ptr<Impl> impl_;
  bool active_ = false;
  bool recording_ = false;
  bool launch_callbacks_ = false;
};

// The absolute path of the libcupti.so this process loaded (dladdr on a CUPTI
// symbol, symlinks resolved), else the first that exists of
// $CUDA_HOME/{extras/CUPTI/lib64,lib64}/libcupti.so and the build's library.
// "" when none is found. The supervisor puts it in the child's
// NVTX_INJECTION64_PATH so NVTX ranges reach CUPTI as MARKER records.
std::string cupti_library_path();
inline constexpr const char* kNvtxInjectionEnv = "NVTX_INJECTION64_PATH";

}  // namespace harness::trace
