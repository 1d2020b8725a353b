#pragma once
// Robust summaries of per-step timings. Medians and MAD rather than means and
// standard deviations: one slow warm-up step or a GC pause must not move them.
#include <vector>

namespace harness {

// Median of `v`; NaN when empty.
double median(std::vector<double> v);

// Robust spread: 1.4826 × median absolute deviation, which equals the standard
// deviation for normally distributed data. 0 for fewer than two values.
double mad_spread(const std::vector<double>& v);

}  // namespace harness
