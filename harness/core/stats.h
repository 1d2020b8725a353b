#pragma once
// Robust summaries of per-step timings. Medians and MAD rather than means and
// standard deviations: one slow warm-up step or a GC pause must not move them.
#include <vector>

#include "harness/core/results.h"

namespace harness {

// Median of `v`; NaN when empty.
double median(std::vector<double> v);

// Robust spread: 1.4826 × median absolute deviation, which equals the standard
// deviation for normally distributed data. 0 for fewer than two values.
double mad_spread(const std::vector<double>& v);

// mad_spread over the median: step-to-step noise as a fraction of the step.
// 0 when it cannot be told (fewer than three values, or a median ≤ 0).
double relative_spread(const std::vector<double>& v);

// The cell's step times after the first (warm-up) step, as step_ms_median takes them.
std::vector<double> warm_step_ms(const CellResult& c);

}  // namespace harness
