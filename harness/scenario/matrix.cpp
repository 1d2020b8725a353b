#include "harness/scenario/matrix.h"

#include <algorithm>

namespace harness {
namespace {

const std::string* value_of(const AxisValues& cell, const std::string& key) {
  for (auto& [k, v] : cell)
    if (k == key) return &v;
  return nullptr;
}

bool is_axis(const MatrixInput& m, const std::string& key) {
  return std::any_of(m.axes.begin(), m.axes.end(), [&](const MatrixAxis& a) { return a.name == key; });
}

std::vector<AxisValues> cartesian_product(const std::vector<MatrixAxis>& axes) {
  if (axes.empty()) return {};
  std::vector<AxisValues> cells{AxisValues{}};
  // Extending every partial cell by the next axis keeps the first axis outermost.
  for (auto& axis : axes) {
    std::vector<AxisValues> next;
    for (auto& partial : cells)
      for (auto& v : axis.values) {
        AxisValues c = partial;
        c.emplace_back(axis.name, v);
        next.push_back(std::move(c));
      }
    cells = std::move(next);
  }
  return cells;
}

bool matches_all(const AxisValues& cell, const AxisValues& partial) {
  for (auto& [k, v] : partial) {
    const std::string* mine = value_of(cell, k);
    if (!mine || *mine != v) return false;
  }
  return true;
}

// An include entry fits a product cell when it agrees on every original axis it names.
bool include_fits(const MatrixInput& m, const AxisValues& cell, const AxisValues& entry) {
  for (auto& [k, v] : entry)
    if (is_axis(m, k) && *value_of(cell, k) != v) return false;
  return true;
}

void set_value(AxisValues& cell, const std::string& key, const std::string& value) {
  for (auto& kv : cell)
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  cell.emplace_back(key, value);
}

// A new cell from an include entry: its original axes first (in axis order), then the rest as written.
AxisValues new_cell_from(const MatrixInput& m, const AxisValues& entry) {
  AxisValues cell;
  for (auto& axis : m.axes)
    if (const std::string* v = value_of(entry, axis.name)) cell.emplace_back(axis.name, *v);
  for (auto& [k, v] : entry)
    if (!is_axis(m, k)) cell.emplace_back(k, v);
  return cell;
}

}  // namespace

std::string make_cell_id(const AxisValues& values) {
  if (values.empty()) return "default";
  std::string id;
  for (auto& [k, v] : values) id += (id.empty() ? "" : ",") + k + "=" + v;
  return id;
}

std::vector<MatrixCell> expand_matrix(const MatrixInput& m) {
  if (m.axes.empty() && m.include.empty()) return {MatrixCell{{}, {}, "default"}};

  std::vector<MatrixCell> cells;
  for (auto& values : cartesian_product(m.axes)) {
    bool excluded = std::any_of(m.exclude.begin(), m.exclude.end(),
                                [&](const AxisValues& ex) { return matches_all(values, ex); });
    if (!excluded) cells.push_back(MatrixCell{values, {}, ""});
  }
  const size_t product_cells = cells.size();

  for (size_t i = 0; i < m.include.size(); ++i) {
    const AxisValues& entry = m.include[i];
    bool matched = false;
    for (size_t c = 0; c < product_cells; ++c) {
      if (!include_fits(m, cells[c].values, entry)) continue;
      matched = true;
      for (auto& [k, v] : entry)
        if (!is_axis(m, k)) set_value(cells[c].values, k, v);
      cells[c].includes.push_back(i);
    }
    if (!matched) cells.push_back(MatrixCell{new_cell_from(m, entry), {i}, ""});
  }

  for (auto& c : cells) c.id = make_cell_id(c.values);
  return cells;
}

}  // namespace harness
