#pragma once
// Step timing: the per-step records, the cell's metrics, and whether some step
// was slow and why. Pure functions of the events, unit-tested by hand-written
// sequences.
//
// Warm-up: the first step pays for lazy initialisation (allocator, cuDNN/cuBLAS
// autotuning, kernel loading), so it is left out of the medians and of the
// slow-step check whenever there is more than one step. Otherwise every GPU run
// would have a "slow" first step and the real slow steps would hide behind it.
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"

namespace harness::supervisor {

// A slow step with host syncs counts as sync-bound when it made at least this
// many syncs and this many times the median of the other steps.
inline constexpr int kHostSyncsHigh = 50;
inline constexpr double kHostSyncsRatio = 10.0;
// Step times growing by this factor step over step, for this many consecutive
// steps, name the slowness "growth".
inline constexpr double kGrowthRatio = 1.5;
inline constexpr int kGrowthSteps = 3;

// A slow step must exceed the median of the other steps by at least this much
// and by this many times their spread (scaled MAD): an absolute floor and a
// noise-relative one, so neither a busy machine nor a noisy step calls it.
inline constexpr double kMinSlowExcessMs = 2000.0;
inline constexpr double kSlowNoiseMultiple = 6.0;

// One record per step_end event, in arrival order.
std::vector<StepRecord> steps_from_events(const std::vector<nlohmann::json>& events);

// Medians over steps after the first (step time, tok/s, probe and data
// time), max step time, peak memory (largest "peak_mem_bytes" metric),
// first/last loss.
CellMetrics metrics_from(const std::vector<StepRecord>& steps, const std::vector<nlohmann::json>& events);

// The slow-step finding (severity blocking; code slow_host_syncs,
// slow_step_growth or slow_step), or nullopt when no step was slow. A step is
// slow when it took more than watchdog.slow_step_factor × the median of the
// other steps (needs at least two others) and beyond both floors above; every
// step counts as slow when the typical one breaks `max_step_ms` beyond its
// noise (median_over_limit, the same rule the gate table applies), so that the
// finding can say why (host syncs, growth).
std::optional<Finding> find_slow_step(const std::vector<StepRecord>& steps, const WatchdogSpec& watchdog,
                                      std::optional<double> max_step_ms = std::nullopt);

// Median and scaled MAD (core/stats.h) of the warm steps; nullopt without timed steps.
std::optional<StepNoise> step_noise(const std::vector<StepRecord>& steps);

}  // namespace harness::supervisor
