// Gate statistics per layer: the mean share of each branch, how much gates vary
// over tokens, saturation, constant gates, and the fc2 weight norm. Constant
// gates are a warning (the branches are mixed blindly), never a cause of NaN.
#include "harness/probes/probes.h"
#include "harness/probes/tensor_checks.h"

namespace harness {
namespace {

class GatesProbe : public Probe {
 public:
  explicit GatesProbe(const ProbeSpec& ps) : spec_(ps) {}
  bool wants_tensors(int step) const override { return step == 1 || probe_due(spec_, step); }

  // Every layer's statistics are computed on the device at once (the layers'
  // gates stacked) and come back to the host in one transfer per step.
  void on_step_end(ProbeContext& ctx) override {
    std::vector<int> layer_ids;
    std::vector<at::Tensor> gates, fc2;
    for (auto& e : ctx.tap.entries) {
      if (e.name != "gates") continue;
      layer_ids.push_back(e.layer);
      gates.push_back(e.value.detach());
      auto w = fc2_weight(ctx, e.layer);
      fc2.push_back(w.defined() ? w.detach() : at::zeros({1}, e.value.options()));
    }
    if (gates.empty()) return;
    std::vector<at::Tensor> per_layer;
    if (same_4d_shapes(gates)) {
      per_layer.push_back(layer_stats(at::stack(gates)));
    } else {
      for (auto& g : gates) per_layer.push_back(layer_stats(g.unsqueeze(0)));
    }
    auto norms = at::stack(at::_foreach_norm(fc2, 2, at::kFloat)).to(per_layer.front().device(), at::kFloat);
    auto host = at::cat({at::cat(per_layer), norms.unsqueeze(1)}, 1).to(at::kCPU, at::kDouble).contiguous();
    auto v = host.accessor<double, 2>();
    GateStats stats{ctx.step, {}};
    for (size_t i = 0; i < layer_ids.size(); ++i) {
      stats.layers.push_back({layer_ids[i], v[i][0], v[i][1], v[i][2], v[i][3], v[i][4], v[i][5], v[i][6]});
      check(ctx, stats.layers.back());
    }
    last_ = std::move(stats);
  }
  void on_run_end(ProbeContext& ctx) override {
    if (last_) ctx.table("gates", *last_);
  }

 private:
  // Gates of L layers [L,B,S,H,3] → [L,6]: each branch's mean share of the
  // gate mass (3), the spread over positions, the saturated fraction, the mean.
  static at::Tensor layer_stats(const at::Tensor& gates) {
    auto g = gates.to(at::kFloat);
    auto share = g / g.sum(-1, true).clamp_min(1e-12);
    auto mean_share = share.mean({1, 2, 3});                   // [L,3]
    auto spread = g.std(2).mean({1, 2, 3});                    // std over positions, averaged
    auto saturated = ((g < 0.01) | (g > 0.99)).to(at::kFloat).mean({1, 2, 3, 4});
    auto mean = g.mean({1, 2, 3, 4});
    return at::cat({mean_share, at::stack({spread, saturated, mean}, 1)}, 1);
  }

  static at::Tensor fc2_weight(ProbeContext& ctx, int layer) {
    const std::string w2 = "layers." + std::to_string(layer) + ".attn.gate.w2";
    for (auto& [n, p] : ctx.model.parameters())
      if (n == w2) return p;
    return {};
  }

  void check(ProbeContext& ctx, const LayerGateStats& row) {
    const int layer = row.layer;
    if (row.std_over_tokens < 1e-6 && !warned_constant_) {
      warned_constant_ = true;
      Finding f;
      f.code = std::string(reason::gates_constant);
      f.severity = Severity::warning;
      f.title = "gates are constant over tokens in layer " + std::to_string(layer) + " (mean " +
                fmt_double(row.mean_gate) + ")";
      f.detail = "Every token gets the same gate values, so the three branches are mixed in fixed proportions. With a "
                 "zero-initialised gate fc2 (norm " + fmt_double(row.fc2_norm) +
                 ") the gates are exactly sigmoid(0) = 0.5 until fc2 learns. This slows learning; it does not make "
                 "values non-finite.";
      f.location = "layer " + std::to_string(layer) + " / gate";
      f.evidence = row;
      ctx.report(f);
    }
    if (row.saturated_fraction > 0.9 && !warned_saturated_) {
      warned_saturated_ = true;
      Finding f;
      f.code = std::string(reason::gates_saturated);
      f.severity = Severity::warning;
      f.title = "gates saturated in layer " + std::to_string(layer);
      f.detail = fmt_double(100 * row.saturated_fraction) + "% of gate values are below 0.01 or above 0.99: those branches get no gradient through the gate.";
      f.location = "layer " + std::to_string(layer) + " / gate";
      f.evidence = row;
      ctx.report(f);
    }
    // The branch-share limits (gates.min/max_branch_share) are judged once, in
    // the analysis (analysis/gates.cpp), from this probe's table (CellResult::gate_stats).
  }

  ProbeSpec spec_;
  std::optional<GateStats> last_;
  bool warned_constant_ = false, warned_saturated_ = false;
};

}  // namespace

std::unique_ptr<Probe> make_gates_probe(const ProbeSpec& ps) { return std::make_unique<GatesProbe>(ps); }

}  // namespace harness
