#include "harness/analysis/dense_baseline.h"

#include <cmath>

#include "harness/analysis/axis_pairs.h"
#include "harness/core/stats.h"

namespace harness {
namespace {

constexpr const char* kAxis = "attention";

bool measured_pass(const CellResult& c) {
  return c.outcome == Outcome::pass && c.metrics.tok_s.has_value() && *c.metrics.tok_s > 0;
}

}  // namespace

std::vector<DenseComparison> dense_comparisons(const std::vector<CellResult>& cells) {
  std::vector<DenseComparison> out;
  for (const auto& sparse : cells) {
    if (axis_value(sparse, kAxis) != "nsa" || !measured_pass(sparse)) continue;
    const CellResult* dense = partner_on(cells, sparse, kAxis, "dense");
    if (!dense || !measured_pass(*dense)) continue;
    DenseComparison d;
    d.nsa_cell = sparse.id;
    d.dense_cell = dense->id;
    d.nsa_tok_s = *sparse.metrics.tok_s;
    d.dense_tok_s = *dense->metrics.tok_s;
    d.ratio = d.nsa_tok_s / d.dense_tok_s;
    const double a = relative_spread(warm_step_ms(sparse)), b = relative_spread(warm_step_ms(*dense));
    d.noise = a > 0 && b > 0 ? std::hypot(a, b) : 0.0;
    out.push_back(d);
  }
  return out;
}

}  // namespace harness
