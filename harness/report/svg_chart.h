#pragma once
// A minimal line chart as standalone SVG (no dependencies): one polyline per
// series, axes with "nice" ticks (1/2/5 × 10^k), a legend. Non-finite points
// (a NaN loss) break the line, leaving a gap, and get a × marker on the plot's
// top edge in the series' colour, so "loss went NaN at step 2" is visible.
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); y may be NaN/inf
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
};

std::string render_svg(const LineChart& chart);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 × 10^k.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace harness
