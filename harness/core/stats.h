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

// A series' trend over its index (0, 1, …): the Theil–Sen slope, the median of
// the slopes of every pair of points, and how far the points scatter around
// that line (mad_spread of the residuals). A straight-line fit through noise
// that one spike can tip (a least-squares slope, or the first two points
// against the last two) is what this replaces: up to ~29 % of the points can
// be arbitrary without moving the median slope past the others'.
struct Trend {
  double slope = 0.0;      // per index step; NaN for fewer than two points
  double intercept = 0.0;  // the line at index 0: the median of y_i − slope·i
  double spread = 0.0;     // residual scatter around the line
  double at(double i) const { return intercept + slope * i; }
};
Trend theil_sen(const std::vector<double>& y);

// The cell's step times after the first (warm-up) step, as step_ms_median takes them.
std::vector<double> warm_step_ms(const CellResult& c);

}  // namespace harness
