#include "harness/analysis/dense_baseline.h"

#include <algorithm>
#include <cmath>

#include "harness/analysis/axis_pairs.h"
#include "harness/analysis/axis_settings.h"
#include "harness/core/stats.h"

namespace harness {
namespace {

constexpr const char* kAttentionAxis = "attention";

bool measured_pass(const CellResult& c) {
  return c.outcome == Outcome::pass && c.metrics.tok_s.has_value() && *c.metrics.tok_s > 0;
}

struct Baseline {
  const CellResult* cell = nullptr;
  std::vector<std::string> layer_only_axes;
};

// The exact match wins over the first cell in order: a dense cell that differs
// in an NSA-layer-only flag runs the same program, but a reader comparing the
// ids should not have to take that on trust where an identical one was run.
Baseline baseline_of(const std::vector<CellResult>& cells, const CellResult& sparse) {
  Baseline best;
  for (const auto& dense : cells) {
    if (axis_value(dense, kAttentionAxis) != "dense" || !measured_pass(dense)) continue;
    auto differing = axes_differing(sparse, dense, kAttentionAxis);
    if (!differing || !std::all_of(differing->begin(), differing->end(), is_nsa_layer_only_axis)) continue;
    if (differing->empty()) return {&dense, {}};
    if (!best.cell) best = {&dense, std::move(*differing)};
  }
  return best;
}

}  // namespace

std::vector<DenseComparison> dense_comparisons(const std::vector<CellResult>& cells) {
  std::vector<DenseComparison> out;
  for (const auto& sparse : cells) {
    if (axis_value(sparse, kAttentionAxis) != "nsa" || !measured_pass(sparse)) continue;
    Baseline base = baseline_of(cells, sparse);
    if (!base.cell) continue;
    const CellResult& dense = *base.cell;
    DenseComparison d;
    d.nsa_cell = sparse.id;
    d.dense_cell = dense.id;
    d.layer_only_axes = std::move(base.layer_only_axes);
    d.nsa_tok_s = *sparse.metrics.tok_s;
    d.dense_tok_s = *dense.metrics.tok_s;
    d.ratio = d.nsa_tok_s / d.dense_tok_s;
    const double a = relative_spread(warm_step_ms(sparse)), b = relative_spread(warm_step_ms(dense));
    d.noise = a > 0 && b > 0 ? std::hypot(a, b) : 0.0;
    d.run_noise = std::hypot(run_to_run_spread(cells, sparse), run_to_run_spread(cells, dense));
    out.push_back(d);
  }
  return out;
}

void to_json(nlohmann::json& j, const DenseComparison& d) {
  j = {{"nsa_cell", d.nsa_cell},
       {"dense_cell", d.dense_cell},
       {"layer_only_axes", d.layer_only_axes},
       {"nsa_tok_s", d.nsa_tok_s},
       {"dense_tok_s", d.dense_tok_s},
       {"ratio", d.ratio},
       {"noise", d.noise},
       {"run_noise", d.run_noise}};
}

}  // namespace harness
