// What CUPTI tracing costs per kernel launch on the host. A launch-bound
// training step (thousands of small kernels) pays this on every launch, so it
// decides the CUPTI probe's share of the observation cost. The same loop of
// small ATen ops runs with tracing off and with each part of the CUPTI probe
// switched on in turn; the figure is host wall time per launch. Run with
// --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true: the
// host's speed drifts over seconds, and interleaving spreads that over all parts.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "harness/trace/cupti_tracer.h"
#include "harness/trace/flight_recorder.h"
#include "harness/trace/range_recorder.h"

namespace tr = harness::trace;

namespace {

constexpr int kLaunches = 2000;  // per iteration: long enough that the sync at the end is noise

enum Parts : int { kOff = 0, kFlightOnly, kKernels, kKernelsRuntime, kKernelsRuntimeFlight, kEverything };
const char* kPartNames[] = {"off", "flight recorder only (records off: an untraced step)", "kernels",
                            "kernels+runtime_api", "kernels+runtime_api+flight",
                            "kernels+runtime_api+flight+memcpy+memset+markers (the probe's traced step)"};

void BM_LaunchUnderCupti(benchmark::State& state) {
  if (!at::hasCUDA()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int parts = static_cast<int>(state.range(0));
  state.SetLabel(kPartNames[parts]);
  auto x = at::zeros({256}, at::TensorOptions().device(at::kCUDA));
  const auto flight_path = (std::filesystem::temp_directory_path() / "cupti_cost_bench.flight").string();
  tr::RangeRecorder ranges;
  std::unique_ptr<tr::FlightRecorder> flight;
  std::unique_ptr<tr::CuptiTracer> tracer;
  if (parts != kOff) {
    tr::CuptiTracerOptions opt;
    opt.runtime_api = parts >= kKernelsRuntime || parts == kFlightOnly;
    opt.memcpy = opt.memset = opt.markers = parts >= kEverything || parts == kFlightOnly;
    if (parts >= kKernelsRuntimeFlight || parts == kFlightOnly) {
      flight = std::make_unique<tr::FlightRecorder>(flight_path);
      opt.flight = flight.get();
      opt.ranges = &ranges;
    }
    tracer = std::make_unique<tr::CuptiTracer>(opt);
    if (!tracer->start()) {
      state.SkipWithError("CUPTI could not start");
      return;
    }
    if (parts == kFlightOnly) tracer->set_recording(false);
  }
  for (int i = 0; i < 100; ++i) x.add_(1.0);  // warm-up: allocator, first launches
  cudaDeviceSynchronize();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) x.add_(1.0);
    cudaDeviceSynchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    state.counters["us_per_launch"] = s * 1e6 / kLaunches;
    if (tracer) {  // hand the records over outside the timed loop, as the probe does between steps
      tracer->flush();
      benchmark::DoNotOptimize(tracer->take_events());
    }
  }
  if (tracer) tracer->stop();
  std::filesystem::remove(flight_path);
}

}  // namespace

BENCHMARK(BM_LaunchUnderCupti)->DenseRange(kOff, kEverything)->ArgName("parts")->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
