#pragma once
// A minimal line chart as standalone SVG (no dependencies): one polyline per
// series, axes with "nice" ticks (1/2/5 × 10^k; whole numbers only on an
// integer axis such as steps), a legend below the plot that grows with the
// names so none is cut. Each series has its own colour and dash pattern, and
// a series identical to an earlier one says so in the legend (it is drawn
// exactly under it). Non-finite points (a NaN loss) break the line, leaving a
// gap, and get a × marker on the plot's top edge in the series' colour, so
// "loss went NaN at step 2" is visible; a series that hung or crashed gets a
// dashed vertical line at the step it failed in, labelled with the outcome.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); y may be NaN/inf
  std::optional<double> failed_at;                // x where the series hung or crashed
  std::string failure;                            // "hang", "crash", … (the marker's label)
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
  bool integer_x = false;  // x counts something (steps): ticks only at whole numbers
};

std::string render_svg(const LineChart& chart);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 × 10^k;
// with `integer`, a step of at least 1 (so every tick is a whole number).
std::vector<double> nice_ticks(double lo, double hi, int target = 5, bool integer = false);

}  // namespace harness
