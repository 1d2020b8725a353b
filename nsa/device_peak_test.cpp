// The device peaks against the vendor's published figures (the oracle: NVIDIA's
// datasheets and whitepapers, not this code's table), at the clocks those
// figures are quoted for.
#include "nsa/device_peak.h"

#include <gtest/gtest.h>

namespace nsa {
namespace {

// SMs x clock x the per-SM rate reproduces each published dense bf16 figure at
// the boost clock it is quoted for: A100 SXM 312 TFLOP/s (108 SMs, 1410 MHz),
// H100 SXM 989.4 (132 SMs, 1830 MHz).
TEST(DevicePeak, PerSmRatesReproduceThePublishedFiguresAtTheirClocks) {
  const auto derived = [](int major, int minor, int sms, int mhz) {
    return sms * (mhz * 1e6) * tensor_flops_per_sm_clock(major, minor) / 1e12;
  };
  EXPECT_NEAR(derived(8, 0, 108, 1410), 312.0, 312.0 * 1e-3);
  EXPECT_NEAR(derived(9, 0, 132, 1830), 989.4, 989.4 * 1e-3);
}

// The parts the GPU machines run on, by the names their runtime reports, get
// the published figure, not the maximum-clock product (1070 TFLOP/s for an H100
// SXM reporting 1980 MHz).
TEST(DevicePeak, KnownPartsGetThePublishedFigure) {
  EXPECT_DOUBLE_EQ(dense_bf16_peak("NVIDIA H100 80GB HBM3", 9, 0, 132, 1980000).tflops, 989.4);
  EXPECT_DOUBLE_EQ(dense_bf16_peak("NVIDIA H200", 9, 0, 132, 1980000).tflops, 989.4);
  EXPECT_DOUBLE_EQ(dense_bf16_peak("NVIDIA H100 PCIe", 9, 0, 114, 1755000).tflops, 756.0);
  EXPECT_DOUBLE_EQ(dense_bf16_peak("NVIDIA A100-SXM4-80GB", 8, 0, 108, 1410000).tflops, 312.0);
  EXPECT_NE(dense_bf16_peak("NVIDIA H200", 9, 0, 132, 1980000).source.find("datasheet"), std::string::npos);
}

// Other parts of a known architecture: SMs x the reported clock x the rate,
// said so; an architecture without a checked rate: no figure, and why.
TEST(DevicePeak, OtherPartsAreDerivedOrUnknownWithTheReason) {
  const TensorPeak nvl = dense_bf16_peak("NVIDIA H200 NVL", 9, 0, 132, 1785000);
  EXPECT_NEAR(nvl.tflops, 132 * 1.785e9 * 4096 / 1e12, 1e-9);
  EXPECT_NE(nvl.source.find("132 SMs x 1785 MHz"), std::string::npos) << nvl.source;
  const TensorPeak rtx = dense_bf16_peak("NVIDIA GeForce RTX 4090", 8, 9, 128, 2520000);
  EXPECT_EQ(rtx.tflops, 0);
  EXPECT_NE(rtx.source.find("8.9"), std::string::npos) << rtx.source;
}

// HBM: H100 SXM's 2619 MHz memory clock on a 5120-bit bus is its published
// 3.35 TB/s.
TEST(DevicePeak, HbmBandwidthFromClockAndBusWidth) {
  EXPECT_NEAR(hbm_peak_gbs(2619000, 5120), 3350.0, 3350.0 * 2e-3);
}

}  // namespace
}  // namespace nsa
