// Hand-built records through the real two-pass processor. Every expected number
// below is worked out by hand from the records in the comments.
#include "harness/trace/trace_processor.h"

#include <gtest/gtest.h>

namespace harness::trace {
namespace {

constexpr std::uint32_t kMain = 7;      // the training loop's thread (opens the step ranges)
constexpr std::uint32_t kAutograd = 9;  // a backward device thread: launches, opens no ranges

TraceEvent launch(std::uint32_t corr, std::uint32_t thread, std::uint64_t at) {
  return TraceEvent::make_api("cudaLaunchKernel_v7000", corr, thread, at, at + 10);
}

std::vector<TraceEvent> training_trace() {
  using E = TraceEvent;
  return {
      // Ranges (our recorder). step 0 ⊃ forward ⊃ layer 0; backward. step 1 ⊃ forward. step 2 empty.
      E::make_range("step 0", kMain, 1000, 2000), E::make_range("forward", kMain, 1100, 1500),
      E::make_range("layer 0", kMain, 1150, 1300), E::make_range("backward", kMain, 1600, 1900),
      E::make_range("step 1", kMain, 3000, 4000), E::make_range("forward", kMain, 3100, 3500),
      E::make_range("step 2", kMain, 5000, 6000),
      // Launches and their kernels.
      launch(1, kMain, 1160), E::make_kernel("gemm", 0, 7, 1, 1200, 1300),          // forward/layer 0, 100
      launch(2, kMain, 1310), E::make_kernel("softmax", 0, 7, 2, 1400, 1450),       // forward, 50
      launch(3, kMain, 1620), E::make_kernel("gemm", 0, 7, 3, 1700, 1900),          // backward, 200
      launch(4, kAutograd, 1640), E::make_kernel("gemm_bwd", 0, 8, 4, 1900, 2200),  // backward via step thread, 300
      launch(5, kMain, 3110), E::make_kernel("softmax", 0, 7, 5, 3200, 3250),       // forward, 50
      launch(6, kMain, 2500), E::make_kernel("gemm", 0, 7, 6, 2600, 2700),          // <no range>, 100
      E::make_kernel("orphan", 0, 7, 99, 3300, 3310),                               // <uncorrelated>, 10
      launch(8, kMain, 3600),                                                       // never completed
      // Syncs in step 0: stream sync (with the driver call inside it), async DtoH, device sync.
      E::make_api("cudaStreamSynchronize_v3020", 20, kMain, 1950, 1960),
      E::make_api("cuStreamSynchronize", 21, kMain, 1952, 1958, ApiDomain::driver),
      E::make_api("cudaMemcpyAsync_v3020", 10, kMain, 1940, 1945),
      E::make_memcpy(CopyKind::dtoh, 4, 0, 7, 10, 1946, 1948, /*async=*/true),
      E::make_api("cudaDeviceSynchronize_v3020", 22, kMain, 1990, 1995),
      // Step 1: a blocking cudaMemcpy DtoH (activity after the step ends still
      // belongs to step 1: it is charged by its API call), an event sync, an HtoD.
      E::make_api("cudaMemcpy_v3020", 11, kMain, 3700, 3800),
      E::make_memcpy(CopyKind::dtoh, 8, 0, 7, 11, 3750, 4100, /*async=*/false),
      E::make_api("cudaEventSynchronize_v3020", 23, kMain, 3850, 3860),
      E::make_api("cudaMemcpy_v3020", 12, kMain, 3870, 3880),
      E::make_memcpy(CopyKind::htod, 8, 0, 7, 12, 3871, 3879, false),
      // Outside every step: a runtime stream sync, and a bare driver one.
      E::make_api("cudaStreamSynchronize_v3020", 24, kAutograd, 2800, 2810),
      E::make_api("cuStreamSynchronize", 25, kAutograd, 2900, 2910, ApiDomain::driver),
  };
}

TEST(TraceProcessor, PerKernelTableCountsTotalsMeansAndShares) {
  const TraceSummary s = process_trace(training_trace());
  // gemm 100+200+100 = 400, gemm_bwd 300, softmax 50+50 = 100, orphan 10: 810 ns.
  EXPECT_EQ(s.kernel_ns, 810u);
  EXPECT_EQ(s.kernel_count, 7u);
  ASSERT_EQ(s.kernels.size(), 4u);
  EXPECT_EQ(s.kernels[0].name, "gemm");
  EXPECT_EQ(s.kernels[0].count, 3u);
  EXPECT_EQ(s.kernels[0].total_ns, 400u);
  EXPECT_EQ(s.kernels[0].min_ns, 100u);
  EXPECT_EQ(s.kernels[0].max_ns, 200u);
  EXPECT_DOUBLE_EQ(s.kernels[0].mean_ns, 400.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.kernels[0].share, 400.0 / 810.0);
  EXPECT_EQ(s.kernels[1].name, "gemm_bwd");
  EXPECT_DOUBLE_EQ(s.kernels[1].share, 300.0 / 810.0);
  EXPECT_EQ(s.kernels[2].name, "softmax");
  EXPECT_EQ(s.kernels[2].count, 2u);
  EXPECT_DOUBLE_EQ(s.kernels[2].mean_ns, 50.0);
  EXPECT_EQ(s.kernels[3].name, "orphan");
  double shares = 0;
  for (const auto& k : s.kernels) shares += k.share;
  EXPECT_NEAR(shares, 1.0, 1e-12);
}

// Kernels on several streams overlap: the busy time is the union of their
// intervals per device, summed over devices; touching intervals do not overlap.
TEST(TraceProcessor, BusyTimeIsTheUnionOfKernelIntervalsPerDevice) {
  using E = TraceEvent;
  const std::vector<TraceEvent> events = {
      // Device 0: [100, 300) on stream 1; [200, 350) and [350, 400) on stream 2 (the
      // second touches the first's end); [500, 600) alone; [520, 540) inside it
      // on stream 3. Union: [100, 400) + [500, 600) = 300 + 100 = 400.
      E::make_kernel("a", 0, 1, 1, 100, 300), E::make_kernel("b", 0, 2, 2, 200, 350),
      E::make_kernel("c", 0, 2, 3, 350, 400), E::make_kernel("d", 0, 1, 4, 500, 600),
      E::make_kernel("e", 0, 3, 5, 520, 540),
      // Device 1 at the same times as device 0's first kernel: its own 200.
      E::make_kernel("a", 1, 1, 6, 100, 300),
  };
  const TraceSummary s = process_trace(events);
  EXPECT_EQ(s.kernel_ns, 200u + 150 + 50 + 100 + 20 + 200);
  EXPECT_EQ(s.kernel_busy_ns, 400u + 200);
  // One stream, no overlap: busy equals the sum (the training trace: 810 ns).
  EXPECT_EQ(process_trace(training_trace()).kernel_busy_ns, 810u);
}

TEST(TraceProcessor, CorrelatesLaunchesToKernels) {
  const TraceSummary s = process_trace(training_trace());
  EXPECT_EQ(s.correlation.kernels_correlated, 6u);
  EXPECT_EQ(s.correlation.kernels_uncorrelated, 1u);      // "orphan"
  EXPECT_EQ(s.correlation.kernels_via_step_thread, 1u);   // gemm_bwd from the autograd thread
  EXPECT_EQ(s.correlation.launches_without_kernel, 1u);   // correlation 8
}

TEST(TraceProcessor, KernelTimeGoesToTheInnermostRangeOfItsLaunch) {
  const TraceSummary s = process_trace(training_trace());
  EXPECT_EQ(s.range_source, RangeSource::host_recorder);
  ASSERT_EQ(s.phases.size(), 5u);
  // By GPU time, ties by path: backward 500; then 100 each for "<no range>",
  // "forward", "forward/layer 0"; "<uncorrelated>" 10.
  EXPECT_EQ(s.phases[0].path, "backward");
  EXPECT_EQ(s.phases[0].gpu_ns, 500u);
  EXPECT_EQ(s.phases[0].kernels, 2u);
  EXPECT_EQ(s.phases[1].path, "<no range>");
  EXPECT_EQ(s.phases[1].gpu_ns, 100u);
  EXPECT_EQ(s.phases[2].path, "forward");
  EXPECT_EQ(s.phases[2].gpu_ns, 100u);  // one kernel in step 0 after layer 0 closed, one in step 1
  EXPECT_EQ(s.phases[2].kernels, 2u);
  EXPECT_EQ(s.phases[3].path, "forward/layer 0");
  EXPECT_EQ(s.phases[3].gpu_ns, 100u);
  EXPECT_EQ(s.phases[4].path, "<uncorrelated>");
  EXPECT_EQ(s.phases[4].gpu_ns, 10u);
  EXPECT_DOUBLE_EQ(s.phases[0].share, 500.0 / 810.0);
}

TEST(TraceProcessor, CountsHostSyncsPerStep) {
  const TraceSummary s = process_trace(training_trace());
  ASSERT_EQ(s.steps.size(), 3u);
  const StepSyncs& s0 = s.steps[0];
  EXPECT_EQ(s0.step, 0);
  EXPECT_EQ(s0.stream_syncs, 1);  // the driver call inside cudaStreamSynchronize is not a second one
  EXPECT_EQ(s0.device_syncs, 1);
  EXPECT_EQ(s0.event_syncs, 0);
  EXPECT_EQ(s0.dtoh_copies, 1);
  EXPECT_EQ(s0.dtoh_blocking, 0);
  EXPECT_EQ(s0.host_syncs(), 2);
  const StepSyncs& s1 = s.steps[1];
  EXPECT_EQ(s1.step, 1);
  EXPECT_EQ(s1.stream_syncs + s1.device_syncs, 0);
  EXPECT_EQ(s1.event_syncs, 1);
  EXPECT_EQ(s1.dtoh_copies, 1);  // the HtoD copy is not counted
  EXPECT_EQ(s1.dtoh_blocking, 1);
  EXPECT_EQ(s1.host_syncs(), 2);
  EXPECT_EQ(s.steps[2].step, 2);  // a step with no sync still has its row
  EXPECT_EQ(s.steps[2].host_syncs(), 0);
  EXPECT_EQ(s.outside_steps.stream_syncs, 2);  // runtime + bare driver call
}

std::vector<TraceEvent> marker_trace() {
  using E = TraceEvent;
  return {
      E::make_marker(MarkerPhase::start, 1, "step 0", "nsa", kMain, 0),
      E::make_marker(MarkerPhase::start, 2, "forward", "nsa", kMain, 10),
      E::make_marker(MarkerPhase::start, 3, "cudnn::conv", "cudnn", kMain, 15),  // other domain
      E::make_marker(MarkerPhase::start, 4, "attention", "nsa", kMain, 20),
      launch(1, kMain, 25), E::make_kernel("attn_fwd", 0, 7, 1, 40, 70),
      E::make_marker(MarkerPhase::end, 4, "", "", kMain, 30),
      E::make_marker(MarkerPhase::end, 3, "", "", kMain, 35),
      launch(2, kMain, 40), E::make_kernel("mlp", 0, 7, 2, 80, 100),
      E::make_marker(MarkerPhase::end, 2, "", "", kMain, 50),
      E::make_marker(MarkerPhase::end, 1, "", "", kMain, 60),
      E::make_marker(MarkerPhase::start, 5, "never closed", "nsa", kMain, 70),
      // Our recorder saw the same phases under other names: ignored when markers exist.
      E::make_range("recorded forward", kMain, 0, 60),
  };
}

TEST(TraceProcessor, PairsCuptiMarkersAndPrefersThemOverRecordedRanges) {
  const TraceSummary s = process_trace(marker_trace());
  EXPECT_EQ(s.range_source, RangeSource::cupti_marker);
  EXPECT_EQ(s.correlation.markers_paired, 3u);    // step 0, forward, attention (cudnn filtered)
  EXPECT_EQ(s.correlation.markers_unpaired, 1u);  // "never closed"
  ASSERT_EQ(s.phases.size(), 2u);
  EXPECT_EQ(s.phases[0].path, "forward/attention");
  EXPECT_EQ(s.phases[0].gpu_ns, 30u);
  EXPECT_EQ(s.phases[1].path, "forward");
  EXPECT_EQ(s.phases[1].gpu_ns, 20u);
}

TEST(TraceProcessor, EmptyMarkerDomainOptionTakesEveryDomain) {
  ProcessorOptions opt;
  opt.marker_domain = "";
  const TraceSummary s = process_trace(marker_trace(), {}, opt);
  EXPECT_EQ(s.correlation.markers_paired, 4u);
  // cudnn::conv [15,35] encloses attention [20,30]: attn_fwd (launch at 25) is charged there.
  EXPECT_EQ(s.phases[0].path, "forward/cudnn::conv/attention");
}

TEST(TraceProcessor, ReportsNoRangeSourceWhenThereAreNoRanges) {
  const TraceSummary s = process_trace({launch(1, kMain, 0), TraceEvent::make_kernel("k", 0, 7, 1, 5, 9)});
  EXPECT_EQ(s.range_source, RangeSource::none);
  ASSERT_EQ(s.phases.size(), 1u);
  EXPECT_EQ(s.phases[0].path, "<no range>");
  EXPECT_TRUE(s.steps.empty());
}

TEST(TraceProcessor, CarriesCountersAndMarksTruncation) {
  TraceCounters c;
  c.records_dropped_by_cupti = 12;
  const TraceSummary s = process_trace(training_trace(), c);
  EXPECT_TRUE(s.truncated);
  EXPECT_EQ(s.counters.records_dropped_by_cupti, 12u);
  const nlohmann::json j = s;
  EXPECT_EQ(j["truncated"], true);
  EXPECT_EQ(j["counters"]["dropped"], 12);
  EXPECT_EQ(j["range_source"], "host_recorder");
  EXPECT_EQ(j["steps"][0]["host_syncs"], 2);
  EXPECT_EQ(j["kernels"][0]["name"], "gemm");
}

TEST(TraceProcessor, RuntimeCallWinsCorrelationOverTheDriverCallInsideIt) {
  using E = TraceEvent;
  const TraceSummary s = process_trace({
      E::make_range("forward", kMain, 0, 100),
      E::make_api("cuLaunchKernel", 1, kAutograd, 150, 160, ApiDomain::driver),
      E::make_api("cudaLaunchKernel_v7000", 1, kMain, 50, 60),
      E::make_kernel("k", 0, 7, 1, 200, 210),
  });
  ASSERT_EQ(s.phases.size(), 1u);
  EXPECT_EQ(s.phases[0].path, "forward");
}

}  // namespace
}  // namespace harness::trace
