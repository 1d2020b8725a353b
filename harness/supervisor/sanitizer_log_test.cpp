#include "harness/supervisor/sanitizer_log.h"

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {

// Logs in the layouts compute-sanitizer documents, written by hand.
constexpr const char* kLineInfoLog = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 2 bytes
=========     at void nsa::cuda::(anonymous namespace)::nsa_window_fwd_kernel<c10::BFloat16>(nsa::cuda::AttnParams)+0x1b0 in /src/nsa/cuda/attention_fwd.cu:95
=========     by thread (3,0,0) in block (7,2,0)
=========     Address 0x7f0a00000400 is out of bounds
=========     and is 1,024 bytes after the nearest allocation at 0x7f0a00000000 of size 1,024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: cudaLaunchKernel [0x7a1b0] in libcudart.so.13
=========
========= Invalid __global__ read of size 2 bytes
=========     at void nsa::cuda::(anonymous namespace)::nsa_selected_fwd_kernel<c10::BFloat16>(nsa::cuda::AttnParams)+0x1c0 in /src/nsa/cuda/attention_fwd.cu:96
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaStreamSynchronize.
========= ERROR SUMMARY: 2 errors
)";

constexpr const char* kOldLog = R"(========= CUDA-MEMCHECK
========= Invalid __global__ read of size 8
=========     at 0x000000c8 in /home/u/src/my_helper.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (9,0,0) in block (0,0,0)
=========     Address 0x000370e8 is out of bounds
========= ERROR SUMMARY: 12 errors
)";

constexpr const char* kNoLineInfoLog = R"(========= Invalid __global__ write of size 4 bytes
=========     at 0x22e20 in void cub::Kernel<int, cub::Policy<(int)1>>(T1, int, int *)
=========     by thread (0,0,0) in block (0,0,0)
========= ERROR SUMMARY: 1 error
)";

TEST(SanitizerLog, LineInfoLayoutNamesFirstKernelAndSource) {
  auto r = parse_sanitizer_log(kLineInfoLog);
  ASSERT_TRUE(r.errors.has_value());
  EXPECT_EQ(*r.errors, 2);
  EXPECT_EQ(r.first_error, "Invalid __global__ read of size 2 bytes");
  EXPECT_EQ(r.kernel, "nsa_window_fwd_kernel<c10::BFloat16>");
  EXPECT_EQ(r.source, "/src/nsa/cuda/attention_fwd.cu:95");
  EXPECT_EQ(r.address, "Address 0x7f0a00000400 is out of bounds");
  EXPECT_NE(r.api_error.find("cudaErrorLaunchFailure"), std::string::npos);
}

// CUDA 13's layout, copied in shape from a real run: the access happens in an
// inlined helper; the device backtrace's last frame is the kernel.
constexpr const char* kDeviceFrameLog = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at void nsa::cuda::<unnamed>::attn_fwd_body<float, (nsa::cuda::Branch)0>(const nsa::cuda::AttnParams &)+0x1500 in attention_fwd.cu:84
=========     by thread (32,0,0) in block (2,0,0)
=========     Access to 0x80a485a07180 is out of bounds
=========     and is 1,099,291,455,361 bytes after the nearest allocation at 0x7fa492c00000 of size 512 bytes
=========         Device Frame: void nsa::cuda::<unnamed>::nsa_window_fwd_kernel<float>(nsa::cuda::AttnParams)+0x10 in attention_fwd.cu:149
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x39fb94] in libcuda.so.1
=========         Host Frame: void nsa::cuda::(anonymous namespace)::nsa_selected_fwd_kernel<float>(nsa::cuda::AttnParams) in attention_fwd.cu:148 [0x305e62] in nsa-harness
=========
========= ERROR SUMMARY: 1518 errors
)";

TEST(SanitizerLog, DeviceBacktraceNamesTheKernelAndTheHelper) {
  auto r = parse_sanitizer_log(kDeviceFrameLog);
  EXPECT_EQ(r.errors.value_or(-1), 1518);
  EXPECT_EQ(r.kernel, "nsa_window_fwd_kernel<float>");  // not the host frame's name
  EXPECT_EQ(r.access_in, "attn_fwd_body<float, (nsa::cuda::Branch)0>");
  EXPECT_EQ(r.source, "attention_fwd.cu:84");
  EXPECT_EQ(r.address, "Access to 0x80a485a07180 is out of bounds");
}

TEST(SanitizerLog, OlderLayoutSourceBeforeFunction) {
  auto r = parse_sanitizer_log(kOldLog);
  EXPECT_EQ(r.errors.value_or(-1), 12);
  EXPECT_EQ(r.kernel, "vector_projection<double>");
  EXPECT_EQ(r.source, "/home/u/src/my_helper.cuh:75");
}

TEST(SanitizerLog, WithoutLineInfo) {
  auto r = parse_sanitizer_log(kNoLineInfoLog);
  EXPECT_EQ(r.errors.value_or(-1), 1);
  EXPECT_EQ(r.first_error, "Invalid __global__ write of size 4 bytes");
  EXPECT_EQ(r.kernel, "Kernel<int, cub::Policy<(int)1>>");
  EXPECT_EQ(r.source, "");
}

TEST(SanitizerLog, CleanRunAndTruncatedLog) {
  auto clean = parse_sanitizer_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_EQ(clean.errors.value_or(-1), 0);
  EXPECT_EQ(clean.kernel, "");
  auto cut = parse_sanitizer_log("========= Invalid __shared__ write of size 4 bytes\n");
  EXPECT_FALSE(cut.errors.has_value());
  EXPECT_EQ(cut.first_error, "Invalid __shared__ write of size 4 bytes");
  EXPECT_TRUE(parse_sanitizer_log("program output only\n").first_error.empty());
}

}  // namespace
}  // namespace harness::supervisor
