// Every kernel's start and end on the GPU, for any CUDA program, as a CSV: a
// CUDA injection library (CUDA_INJECTION64_PATH) around harness_cupti's tracer.
//
//   NSA_TIMELINE_OUT=t.csv CUDA_INJECTION64_PATH=build/benchmarks/libkernel_timeline.so \
//     nsa_cuda_bench --benchmark_filter='BM_LayerFwdBwdChoices/shape:1/S:8192/fast:1/' \
//     --benchmark_min_time=9x
//   python3 scripts/kernel_timeline.py t.csv
//
// Why: ncu times kernels one at a time, serialized, and says nothing about how
// a layer's kernels on several streams overlap or where the GPU waits; the
// machines have no Nsight Systems. This writes what CUPTI's concurrent-kernel
// records say: for each kernel, copy and set its stream and GPU start / end, and
// for each runtime and driver API call its host start / end and correlation id
// (a kernel's correlation id names the call that launched it), so the script can
// cut the run into the benchmark's timed iterations (the calls between two
// cudaEventSynchronize) and show one iteration's streams, busy time and gaps.
//
// CUDA calls InitializeInjection() at cuInit; the tracer starts then, and the
// CSV is written at exit (atexit runs handlers in reverse order, so this one,
// registered after the CUDA runtime's, runs before the runtime tears down). The
// records stay in the tracer's bounded buffers until then: a program long enough
// to fill them loses the rest, and the count on stderr says so.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "harness/core/kernel_name.h"
#include "harness/trace/cupti_tracer.h"

namespace {

namespace tr = harness::trace;

std::unique_ptr<tr::CuptiTracer>& tracer() {
  static std::unique_ptr<tr::CuptiTracer> t;
  return t;
}

// Only names can hold a comma (template arguments) or a quote: they are quoted.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_timeline() {
  auto& t = tracer();
  if (!t) return;
  t->stop();
  const auto events = t->take_events();
  const auto counters = t->counters();
  const char* path = std::getenv("NSA_TIMELINE_OUT");
  std::FILE* f = std::fopen(path != nullptr ? path : "kernel-timeline.csv", "w");
  if (f == nullptr) {
    std::fprintf(stderr, "kernel_timeline: cannot write %s\n", path != nullptr ? path : "kernel-timeline.csv");
    return;
  }
  std::fprintf(f, "kind,stream,start_ns,end_ns,correlation,name\n");
  std::size_t kernels = 0;
  for (const auto& e : events) {
    const char* kind = e.kind == tr::EventKind::kernel   ? "kernel"
                       : e.kind == tr::EventKind::memcpy ? "memcpy"
                       : e.kind == tr::EventKind::memset ? "memset"
                       : e.kind == tr::EventKind::api    ? "api"
                                                         : nullptr;
    if (kind == nullptr) continue;
    const bool kernel = e.kind == tr::EventKind::kernel;
    kernels += kernel;
    const std::string name = kernel ? harness::readable_kernel_name(e.name) : e.name;
    std::fprintf(f, "%s,%u,%llu,%llu,%u,%s\n", kind, e.stream, static_cast<unsigned long long>(e.start_ns),
                 static_cast<unsigned long long>(e.end_ns), e.correlation_id, quoted(name).c_str());
  }
  std::fclose(f);
  // Records CUPTI dropped for want of a buffer would leave holes in the timeline: say so.
  std::fprintf(stderr, "kernel_timeline: %zu kernels, %zu records, %llu dropped, %zu tracing errors\n", kernels,
               events.size(), static_cast<unsigned long long>(counters.dropped()), t->errors().size());
  t.reset();
}

}  // namespace

extern "C" int InitializeInjection() {
  tr::CuptiTracerOptions opt;
  opt.markers = false;
  // Libraries launch through the driver too (cuDNN's kernels, cuBLAS's): their
  // kernels' correlation ids name driver calls, which the script needs to place them.
  opt.driver_api = true;
  auto& t = tracer();
  t = std::make_unique<tr::CuptiTracer>(opt);
  if (!t->start()) {
    for (const auto& e : t->errors()) std::fprintf(stderr, "kernel_timeline: %s\n", e.c_str());
    t.reset();
    return 0;
  }
  std::atexit(write_timeline);
  return 1;
}
