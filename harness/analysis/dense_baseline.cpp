#include "harness/analysis/dense_baseline.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "harness/analysis/axis_pairs.h"
#include "harness/analysis/stats.h"

namespace harness {
namespace {

constexpr const char* kAxis = "attention";

std::optional<std::string> attention_value(const CellResult& c) { return axis_value(c, kAxis); }

AxisValues without_attention(const AxisValues& axes) { return without_axis(axes, kAxis); }

bool measured_pass(const CellResult& c) {
  return c.outcome == Outcome::pass && c.metrics.tok_s.has_value() && *c.metrics.tok_s > 0;
}

// Robust σ of the warm steps' times over their median (the first step is
// warm-up, as in the tok/s median); 0 when fewer than three.
double relative_noise(const CellResult& c) {
  std::vector<double> ms;
  for (size_t i = 1; i < c.steps.size(); ++i) ms.push_back(c.steps[i].step_ms);
  const double mid = ms.size() >= 3 ? median(ms) : 0.0;
  return mid > 0 ? mad_spread(ms) / mid : 0.0;
}

}  // namespace

std::vector<DenseComparison> dense_comparisons(const std::vector<CellResult>& cells) {
  std::vector<DenseComparison> out;
  for (const auto& sparse : cells) {
    if (attention_value(sparse) != "nsa" || !measured_pass(sparse)) continue;
    const AxisValues rest = without_attention(sparse.axes);
    auto dense = std::find_if(cells.begin(), cells.end(), [&](const CellResult& c) {
      return attention_value(c) == "dense" && without_attention(c.axes) == rest;
    });
    if (dense == cells.end() || !measured_pass(*dense)) continue;
    DenseComparison d;
    d.nsa_cell = sparse.id;
    d.dense_cell = dense->id;
    d.nsa_tok_s = *sparse.metrics.tok_s;
    d.dense_tok_s = *dense->metrics.tok_s;
    d.ratio = d.nsa_tok_s / d.dense_tok_s;
    const double a = relative_noise(sparse), b = relative_noise(*dense);
    d.noise = a > 0 && b > 0 ? std::hypot(a, b) : 0.0;
    out.push_back(d);
  }
  return out;
}

}  // namespace harness
