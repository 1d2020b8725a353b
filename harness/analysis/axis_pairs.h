#pragma once
// Cells that differ in one axis only: the pairs the observation-cost table
// (probes all / none) and the dense comparison (attention nsa / dense) read;
// and which other axes two cells differ on, for the dense comparison's pairs
// across flags a dense cell does not read.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/results.h"

namespace harness {

// The value the cell took on `axis`, if the matrix had that axis.
inline std::optional<std::string> axis_value(const CellResult& c, std::string_view axis) {
  for (const auto& [k, v] : c.axes)
    if (k == axis) return v;
  return std::nullopt;
}

// The cell's axes without `axis`: equal for two cells that differ only there.
inline AxisValues without_axis(const AxisValues& axes, std::string_view axis) {
  AxisValues out;
  for (const auto& kv : axes)
    if (kv.first != axis) out.push_back(kv);
  return out;
}

// The cell that differs from `c` only in taking `value` on `axis`; null when
// the matrix has none.
inline const CellResult* partner_on(const std::vector<CellResult>& cells, const CellResult& c, std::string_view axis,
                                    std::string_view value) {
  const AxisValues rest = without_axis(c.axes, axis);
  for (const auto& other : cells)
    if (axis_value(other, axis) == value && without_axis(other.axes, axis) == rest) return &other;
  return nullptr;
}

// How much one run of `c` differs from another of the same settings: the
// sample standard deviation of the median steps of `c` and of the cells that
// differ from it only in `repeat` (the matrix's `repeat: N`), over their mean;
// 0 when fewer than two of them passed with a step median. Two processes on one
// machine differ by more than one process's steps do (another placement, clock
// or neighbour): a comparison of two runs carries this noise once per run.
inline double run_to_run_spread(const std::vector<CellResult>& cells, const CellResult& c) {
  if (!axis_value(c, "repeat")) return 0.0;
  const AxisValues rest = without_axis(c.axes, "repeat");
  std::vector<double> medians;
  for (const auto& other : cells)
    if (other.outcome == Outcome::pass && other.metrics.step_ms_median && axis_value(other, "repeat") &&
        without_axis(other.axes, "repeat") == rest)
      medians.push_back(*other.metrics.step_ms_median);
  if (medians.size() < 2) return 0.0;
  double mean = 0;
  for (double m : medians) mean += m / double(medians.size());
  if (mean <= 0) return 0.0;
  double ss = 0;
  for (double m : medians) ss += (m - mean) * (m - mean);
  return std::sqrt(ss / double(medians.size() - 1)) / mean;
}

// The axes besides `axis` on which `a` and `b` take different values, in the
// matrix's order (empty: they differ at most on `axis`, as partner_on's pairs);
// nothing when their axes are not the same names in the same order, as for
// cells of different matrices, which are never compared.
inline std::optional<std::vector<std::string>> axes_differing(const CellResult& a, const CellResult& b,
                                                              std::string_view axis) {
  const AxisValues ra = without_axis(a.axes, axis), rb = without_axis(b.axes, axis);
  if (ra.size() != rb.size()) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i].first != rb[i].first) return std::nullopt;
    if (ra[i].second != rb[i].second) out.push_back(ra[i].first);
  }
  return out;
}

}  // namespace harness
