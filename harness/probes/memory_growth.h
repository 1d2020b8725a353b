#pragma once
// Is memory growing step over step, steadily — a leak (a tensor kept per step,
// a cache that never drops) rather than warm-up or allocator noise?
//
// Input: the bytes in use after each step (allocated, not reserved: a caching
// allocator's reserve grows in jumps and stays). The first step is warm-up
// (optimizer state, lazy buffers) and is left out. Growth is steady when
// every later step added memory, no step-to-step increase was tiny next to
// the typical one, and the typical increase is above kMinLeakBytesPerStep.
// Needs kMinGrowthSteps increases, so a 6-step run is judged on 4.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace harness {

// Below 32 KiB a step is the process's own bookkeeping (event and probe records
// grow by a few KiB a step on a clean run, measured on the tiny model); one kept
// activation of the smallest model (2 × 64 × 64 fp32) is 32 KiB.
inline constexpr double kMinLeakBytesPerStep = 32768.0;
inline constexpr size_t kMinGrowthSteps = 4;
// Every increase must be at least this share of the median one ("steady", not a jump).
inline constexpr double kSteadyShare = 0.25;

struct MemoryGrowth {
  double bytes_per_step = 0.0;  // median increase
  double total_bytes = 0.0;     // from the first judged step to the last
  size_t steps = 0;             // increases judged
};

inline std::optional<MemoryGrowth> steady_growth(const std::vector<double>& in_use) {
  if (in_use.size() < kMinGrowthSteps + 2) return std::nullopt;  // warm-up step + the increases
  std::vector<double> inc;
  for (size_t i = 2; i < in_use.size(); ++i) inc.push_back(in_use[i] - in_use[i - 1]);
  std::vector<double> sorted = inc;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                       : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  if (med < kMinLeakBytesPerStep) return std::nullopt;
  for (double d : inc)
    if (d < kSteadyShare * med) return std::nullopt;
  return MemoryGrowth{med, in_use.back() - in_use[1], inc.size()};
}

}  // namespace harness
