#include "harness/trace/cupti_tracer.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

#include "harness/trace/cupti_check.h"
#include "harness/trace/cupti_convert.h"

namespace harness::trace {
namespace cupti_detail {
namespace {

// Failures are process-wide: CUPTI itself is (one subscriber, one set of buffer
// callbacks per process), and calls fail before any tracer could own them.
struct ErrorLog {
  std::mutex mu;
  std::vector<std::string> messages;
  std::set<std::string> sites;  // file:line already printed
  std::uint64_t count = 0;
};
ErrorLog& error_log() {
  static ErrorLog log;
  return log;
}

}  // namespace

std::string result_text(CUptiResult result) {
  const char* s = nullptr;
  if (cuptiGetResultString(result, &s) == CUPTI_SUCCESS && s != nullptr) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

bool report_failure(CUptiResult result, const char* call, const char* file, int line) {
  const std::string site = std::string(file) + ":" + std::to_string(line);
  const std::string msg = site + ": " + call + " failed: " + result_text(result);
  ErrorLog& log = error_log();
  std::lock_guard<std::mutex> lock(log.mu);
  ++log.count;
  if (log.sites.insert(site).second) {
    std::fprintf(stderr, "nsa-harness: tracing degraded: %s\n", msg.c_str());
    if (log.messages.size() < kMaxTracingErrors) log.messages.push_back(msg);
  }
  return false;
}

}  // namespace cupti_detail

using cupti_detail::Converted;

struct CuptiTracer::Impl {
  explicit Impl(const CuptiTracerOptions& o)
      : opt(o), pool(o.max_buffers, o.buffer_bytes), store(o.max_pending_events) {}
  CuptiTracerOptions opt;
  ActivityBufferPool pool;
  EventStore store;
  std::vector<CUpti_ActivityKind> enabled;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<std::uint64_t> dropped_by_cupti{0};
  std::atomic<std::uint64_t> ignored{0};
};

namespace {

// CUPTI's buffer callbacks carry no user pointer: the active tracer is global.
std::atomic<CuptiTracer::Impl*> g_active{nullptr};
// Set while this thread is inside a runtime launch, so the driver launch the
// runtime makes underneath is not recorded twice in the flight recorder.
thread_local bool t_in_runtime_launch = false;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  CuptiTracer::Impl* impl = g_active.load(std::memory_order_acquire);
  *buffer = impl ? impl->pool.acquire() : nullptr;
  *size = *buffer ? impl->pool.buffer_bytes() : 0;  // 0: CUPTI drops and counts
  *max_records = 0;                                  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid) {
  CuptiTracer::Impl* impl = g_active.load(std::memory_order_acquire);
  if (impl == nullptr) return;  // stop() force-flushes before clearing; nothing should come
  if (buffer != nullptr && valid > 0) {
    CUpti_Activity* record = nullptr;
    for (;;) {
      const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &record);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (!NSA_CUPTI_CALL(r)) break;
      TraceEvent e;
      if (cupti_detail::convert_record(record, e) == Converted::event) {
        impl->store.add(std::move(e));
      } else {
        impl->ignored.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  std::size_t dropped = 0;
  if (NSA_CUPTI_CALL(cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped))) {
    impl->dropped_by_cupti.fetch_add(dropped, std::memory_order_relaxed);
  }
  if (buffer != nullptr) impl->pool.release(buffer);
}

void CUPTIAPI on_launch(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId,
                        const void* data) {
  auto* impl = static_cast<CuptiTracer::Impl*>(userdata);
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (info->callbackSite == CUPTI_API_EXIT) {
    if (runtime) t_in_runtime_launch = false;
    return;
  }
  if (runtime) {
    t_in_runtime_launch = true;
  } else if (t_in_runtime_launch) {
    return;
  }
  if (impl->opt.flight == nullptr) return;
  std::uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) ts = steady_clock_ns();
  const std::uint32_t thread = current_thread_id();
  char path[kFlightPathChars];
  path[0] = '\0';
  std::size_t n = 0;
  if (impl->opt.ranges != nullptr) n = impl->opt.ranges->copy_current_path(thread, path, sizeof path);
  const char* name = info->symbolName ? info->symbolName : info->functionName;
  impl->opt.flight->record(name ? name : "<unknown>", ts, info->correlationId, thread,
                           std::string_view(path, n));
}

// Runtime calls that neither launch, copy, allocate nor wait: queries. PyTorch
// calls cudaGetDevice around nearly every op — 78 % of all runtime records in a
// measured training trace, cudaGetLastError another 10 % — so recording them
// costs step time, buffer space and trace size and tells nothing a report uses.
constexpr CUpti_CallbackId kQuietRuntimeApis[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
};

void quiet_query_apis() {
  for (CUpti_CallbackId cbid : kQuietRuntimeApis) NSA_CUPTI_CALL(cuptiActivityEnableRuntimeApi(cbid, 0));
}

constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    // A replay of the captured training step (nsa/step_graph.h): one launch for
    // the whole step, so a hang inside it names the replay, not the last
    // kernel some eager step launched.
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

void enable_launch_callbacks(CUpti_SubscriberHandle subscriber, bool on) {
  for (CUpti_CallbackId cbid : kRuntimeLaunches)
    NSA_CUPTI_CALL(cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
  for (CUpti_CallbackId cbid : kDriverLaunches)
    NSA_CUPTI_CALL(cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
}

}  // namespace

CuptiTracer::CuptiTracer(CuptiTracerOptions opt)
    : opt_(opt), impl_(std::make_unique<Impl>(opt)) {}

CuptiTracer::~CuptiTracer() { stop(); }

std::uint64_t CuptiTracer::timestamp_ns() {
  std::uint64_t ts = 0;
  return cuptiGetTimestamp(&ts) == CUPTI_SUCCESS ? ts : steady_clock_ns();
}

bool CuptiTracer::start() {
  if (active_) return true;
  Impl* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, impl_.get())) {
    cupti_detail::report_failure(CUPTI_ERROR_INVALID_OPERATION, "CuptiTracer::start (another tracer is active)", __FILE__, __LINE__);
    return false;
  }
  if (!NSA_CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed))) {
    g_active.store(nullptr);
    return false;
  }
  // Kernels are the point: without them, tracing is off. The rest degrade alone.
  if (!NSA_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))) {
    g_active.store(nullptr);
    return false;
  }
  impl_->enabled.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  auto optional_kind = [&](bool want, CUpti_ActivityKind kind) {
    if (want && NSA_CUPTI_CALL(cuptiActivityEnable(kind))) impl_->enabled.push_back(kind);
  };
  optional_kind(opt_.memcpy, CUPTI_ACTIVITY_KIND_MEMCPY);
  optional_kind(opt_.memset, CUPTI_ACTIVITY_KIND_MEMSET);
  optional_kind(opt_.runtime_api, CUPTI_ACTIVITY_KIND_RUNTIME);
  if (opt_.runtime_api) quiet_query_apis();
  optional_kind(opt_.driver_api, CUPTI_ACTIVITY_KIND_DRIVER);
  optional_kind(opt_.markers, CUPTI_ACTIVITY_KIND_MARKER);

  if (opt_.flight != nullptr &&
      NSA_CUPTI_CALL(cuptiSubscribe(&impl_->subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_launch), impl_.get()))) {
    enable_launch_callbacks(impl_->subscriber, true);
    launch_callbacks_ = true;
  }
  // Host ranges must share CUPTI's clock, or kernels fall into the wrong phase.
  if (opt_.ranges != nullptr) opt_.ranges->set_clock(&CuptiTracer::timestamp_ns);
  active_ = true;
  recording_ = true;
  return true;
}

void CuptiTracer::set_launch_callbacks(bool on) {
  if (!active_ || impl_->subscriber == nullptr || on == launch_callbacks_) return;
  enable_launch_callbacks(impl_->subscriber, on);
  launch_callbacks_ = on;
}

void CuptiTracer::set_recording(bool on) {
  if (!active_ || on == recording_) return;
  for (CUpti_ActivityKind kind : impl_->enabled)
    NSA_CUPTI_CALL(on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind));
  if (on && opt_.runtime_api) quiet_query_apis();
  recording_ = on;
}

void CuptiTracer::flush(bool forced) {
  if (!active_) return;
  NSA_CUPTI_CALL(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

void CuptiTracer::stop() {
  if (!active_) return;
  for (CUpti_ActivityKind kind : impl_->enabled) NSA_CUPTI_CALL(cuptiActivityDisable(kind));
  impl_->enabled.clear();
  flush(/*forced=*/true);
  if (impl_->subscriber != nullptr) {
    NSA_CUPTI_CALL(cuptiUnsubscribe(impl_->subscriber));
    impl_->subscriber = nullptr;
  }
  g_active.store(nullptr, std::memory_order_release);
  active_ = false;
  recording_ = false;
  launch_callbacks_ = false;
}

std::vector<TraceEvent> CuptiTracer::take_events() { return impl_->store.take(); }

TraceCounters CuptiTracer::counters() const {
  TraceCounters c = impl_->store.counters();
  c.records_dropped_by_cupti += impl_->dropped_by_cupti.load();
  c.buffer_requests_refused += impl_->pool.refused();
  c.records_ignored += impl_->ignored.load();
  std::lock_guard<std::mutex> lock(cupti_detail::error_log().mu);
  c.tracing_errors += cupti_detail::error_log().count;
  return c;
}

std::vector<std::string> CuptiTracer::errors() const {
  std::lock_guard<std::mutex> lock(cupti_detail::error_log().mu);
  return cupti_detail::error_log().messages;
}

}  // namespace harness::trace
