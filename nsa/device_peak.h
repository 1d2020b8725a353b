// What a GPU can do at best, the yardstick for "% of peak" beside a measured
// throughput: its dense 16-bit tensor-core FLOP/s and its HBM bandwidth.
// Pure functions of the facts the CUDA runtime reports (name, compute
// capability, SMs, clocks, bus width), with no CUDA here, so any machine tests
// them against the vendor's published figures (device_peak_test.cpp). The
// kernel benchmark (nsa/cuda/nsa_cuda_bench.cpp) asks the device and reports
// peak_share = TFLOP/s ÷ dense_bf16_peak and hbm_share = GB/s ÷ hbm_peak_gbs.
#pragma once

#include <string>
#include <string_view>

namespace nsa {

// Dense (no 2:4 sparsity) fp16/bf16 tensor-core FLOPs per SM per clock with
// fp32 accumulation, by compute capability: 2048 on sm_80 (A100: 108 SMs x
// 1410 MHz x 2048 = 312 TFLOP/s), 4096 on sm_90 (H100 SXM: 132 x 1830 MHz x
// 4096 = 989 TFLOP/s). 0 for the others: the consumer parts (8.6, 8.9, 12.x)
// run 16-bit MMAs with fp32 accumulation at part rate, and no other part was
// measured here to check a figure against.
constexpr double tensor_flops_per_sm_clock(int major, int minor) {
  if (major == 8 && minor == 0) return 2048;
  if (major == 9 && minor == 0) return 4096;
  return 0;
}

struct TensorPeak {
  double tflops = 0;   // dense bf16 TFLOP/s; 0: unknown
  std::string source;  // where the figure comes from, or why there is none
};

// The vendor's published dense bf16 figure for the parts it names (the name
// the runtime reports, e.g. "NVIDIA H100 80GB HBM3"), since their SM clock
// under tensor load is below the maximum the runtime reports (an H100 SXM
// reports 1980 MHz; its 989 TFLOP/s are at 1830); else SMs x the maximum SM
// clock x tensor_flops_per_sm_clock, said so in `source`.
inline TensorPeak dense_bf16_peak(std::string_view name, int major, int minor, int sms, int sm_clock_khz) {
  struct Published {
    std::string_view part;  // a substring of the runtime's name
    double tflops;
    std::string_view label;
  };
  // Most specific first: "H100 PCIe" before "H100". The NVL variants run at
  // lower clocks than the SXM parts whose names they contain: derived below.
  static constexpr Published kPublished[] = {
      {"H100 PCIe", 756.0, "NVIDIA H100 PCIe datasheet"},
      {"H100", 989.4, "NVIDIA H100 SXM datasheet"},
      {"H200", 989.4, "NVIDIA H200 SXM datasheet"},
      {"A100", 312.0, "NVIDIA A100 datasheet"},
  };
  if (name.find("NVL") == std::string_view::npos) {
    for (const Published& p : kPublished)
      if (name.find(p.part) != std::string_view::npos) return {p.tflops, std::string(p.label)};
  }
  const double per_clock = tensor_flops_per_sm_clock(major, minor);
  if (per_clock == 0 || sms <= 0 || sm_clock_khz <= 0) {
    return {0, "no dense bf16 rate known for compute capability " + std::to_string(major) + "." +
                   std::to_string(minor)};
  }
  return {sms * (sm_clock_khz * 1e3) * per_clock / 1e12,
          std::to_string(sms) + " SMs x " + std::to_string(sm_clock_khz / 1000) + " MHz (maximum SM clock) x " +
              std::to_string(int(per_clock)) + " FLOP per SM per clock"};
}

// Peak HBM bandwidth in GB/s from the memory clock and bus width (double data
// rate): H100 SXM 2619 MHz x 5120 bits = 3352 GB/s (published: 3.35 TB/s).
constexpr double hbm_peak_gbs(int mem_clock_khz, int bus_bits) {
  return 2.0 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9;
}

}  // namespace nsa
