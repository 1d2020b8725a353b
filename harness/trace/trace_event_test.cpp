#include "harness/trace/trace_event.h"

#include <gtest/gtest.h>

namespace harness::trace {
namespace {

TEST(StripApiSuffix, DropsCuptiVersionAndPerThreadStreamSuffixes) {
  // CUPTI's callback name → the API's name.
  const std::pair<const char*, const char*> names[] = {
      {"cudaLaunchKernel_v7000", "cudaLaunchKernel"},     {"cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel"},
      {"cudaMemcpyAsync_ptsz_v7000", "cudaMemcpyAsync"},  {"cudaStreamSynchronize", "cudaStreamSynchronize"},
      {"cuMemcpy_v2", "cuMemcpy"},                        {"my_vector", "my_vector"},  // "_v" + non-digits stays
  };
  for (auto [cupti, api] : names) EXPECT_EQ(strip_api_suffix(cupti), api) << cupti;
}

TEST(ClassifySyncApi, KnowsStreamDeviceAndEventSyncsInBothApis) {
  EXPECT_EQ(classify_sync_api("cudaStreamSynchronize_v3020"), SyncKind::stream);
  EXPECT_EQ(classify_sync_api("cudaStreamSynchronize_ptsz_v7000"), SyncKind::stream);
  EXPECT_EQ(classify_sync_api("cuStreamSynchronize"), SyncKind::stream);
  EXPECT_EQ(classify_sync_api("cudaDeviceSynchronize_v3020"), SyncKind::device);
  EXPECT_EQ(classify_sync_api("cuCtxSynchronize"), SyncKind::device);
  EXPECT_EQ(classify_sync_api("cudaEventSynchronize"), SyncKind::event);
  EXPECT_EQ(classify_sync_api("cudaEventRecord"), SyncKind::none);
  EXPECT_EQ(classify_sync_api("cudaMemcpyAsync"), SyncKind::none);
}

TEST(IsLaunchApi, RuntimeDriverAndCuda13InternalLaunches) {
  EXPECT_TRUE(is_launch_api("cudaLaunchKernel_v7000"));
  EXPECT_TRUE(is_launch_api("cudaLaunchKernelExC_v11060"));
  EXPECT_TRUE(is_launch_api("__cudaLaunchKernel_v13000"));
  EXPECT_TRUE(is_launch_api("cuLaunchKernel"));
  EXPECT_FALSE(is_launch_api("cudaMemcpyAsync"));
  EXPECT_FALSE(is_launch_api("cudaStreamSynchronize"));
}

TEST(Demangle, MangledNamesBecomeReadableOthersStay) {
  EXPECT_EQ(demangle("_Z10add_kernelPfi"), "add_kernel(float*, int)");
  EXPECT_EQ(demangle("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(demangle("_Znot_a_real_mangling"), "_Znot_a_real_mangling");
}

TEST(TraceCounters, AnyDropOrRefusalMarksTruncated) {
  TraceCounters c;
  EXPECT_FALSE(c.truncated());
  c.records_ignored = 5;  // ignored kinds are not losses
  EXPECT_FALSE(c.truncated());
  TraceCounters d;
  d.records_dropped_by_cupti = 3;
  d.ranges_dropped = 2;
  c += d;
  EXPECT_EQ(c.dropped(), 5u);
  EXPECT_TRUE(c.truncated());
  TraceCounters refused;
  refused.buffer_requests_refused = 1;
  EXPECT_TRUE(refused.truncated());
}

}  // namespace
}  // namespace harness::trace
