#pragma once
// Cells that differ in one axis only: the pairs the observation-cost table
// (probes all / none) and the dense comparison (attention nsa / dense) read.
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

}  // namespace harness
