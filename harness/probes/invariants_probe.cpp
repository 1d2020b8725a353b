// NSA invariants on the blocks every query selected (DESIGN.md §2): indices in
// range, causal (j·l' ≤ t), no duplicates, the expected count, forced blocks present.
#include "harness/probes/probes.h"
#include "harness/probes/tensor_checks.h"

namespace harness {
namespace {

class InvariantsProbe : public Probe {
 public:
  explicit InvariantsProbe(const ProbeSpec& ps) : spec_(ps) {}
  bool wants_tensors(int step) const override { return !reported_ && (step == 1 || probe_due(spec_, step)); }

  // Every layer's rows are checked on the device and the verdicts gathered in
  // one host sync; only a layer with a violation is searched row by row (in
  // the plain statement of the invariants) for the first one to report.
  void on_step_end(ProbeContext& ctx) override {
    if (reported_) return;
    const auto& P = ctx.model.config().nsa;
    std::vector<const TensorTap::Entry*> layers;
    std::vector<at::Tensor> idx;
    for (auto& e : ctx.tap.entries) {
      if (e.name != "block_idx") continue;
      layers.push_back(&e);
      idx.push_back(e.value);
    }
    if (layers.empty()) return;
    // Selection from non-finite scores is undefined (NaN compares false both
    // ways): once the step's activations are non-finite, broken rows are a
    // consequence the finite probe already locates, not a selection bug.
    std::vector<at::Tensor> activations;
    for (auto& e : ctx.tap.entries)
      if (e.name != "block_idx" && e.value.defined() && e.value.is_floating_point()) activations.push_back(e.value);
    if (!activations.empty() && !all_finite_together(activations)) return;
    // Every layer's rows at once: the layers stacked into the batch dimension
    // (the invariants are per row), one verdict per layer.
    std::vector<at::Tensor> bad;
    at::Tensor verdict;
    if (same_4d_shapes(idx)) {
      const auto shape = idx.front().sizes().vec();
      const int64_t L = static_cast<int64_t>(idx.size());
      auto all = selection_violations(at::stack(idx).view({-1, shape[1], shape[2], shape[3]}), P.sel_block, P.sel_count);
      verdict = all.view({L, -1}).any(1).cpu();
      bad = all.view({L, shape[0], shape[1], shape[2]}).unbind(0);
    } else {
      std::vector<at::Tensor> any;
      for (auto& t : idx) {
        bad.push_back(selection_violations(t, P.sel_block, P.sel_count));
        any.push_back(bad.back().any());
      }
      verdict = at::stack(any).cpu();
    }
    for (size_t i = 0; i < layers.size(); ++i)
      if (verdict[i].item<bool>() && report_first(ctx, *layers[i], bad[i], P)) return;
  }

 private:
  bool report_first(ProbeContext& ctx, const TensorTap::Entry& e, const at::Tensor& bad, const nsa::NsaParams& P) {
    auto where = bad.nonzero().cpu();  // rows in (b, t, g) order
    auto idx = e.value.to(at::kLong).cpu();
    for (int64_t r = 0; r < where.size(0); ++r) {
      const int64_t b = where[r][0].item<int64_t>(), t = where[r][1].item<int64_t>(), g = where[r][2].item<int64_t>();
      auto sel = idx[b][t][g].contiguous();
      std::vector<int64_t> row(sel.data_ptr<int64_t>(), sel.data_ptr<int64_t>() + sel.numel());
      auto why = selection_row_violation(row, t, P.sel_block, P.sel_count);
      if (!why) continue;  // the two statements disagree: keep looking rather than report nothing
      reported_ = true;
      Finding f;
      f.code = std::string(reason::invariant);
      f.severity = Severity::blocking;
      f.title = "selected blocks break an NSA invariant at layer " + std::to_string(e.layer) + ", position " + std::to_string(t);
      f.detail = *why;
      f.location = "layer " + std::to_string(e.layer) + " / slc / selection";
      f.evidence = {{"b", b}, {"t", t}, {"group", g}, {"selected", row}};
      ctx.report(f);
      return true;
    }
    return false;
  }

  ProbeSpec spec_;
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<Probe> make_invariants_probe(const ProbeSpec& ps) { return std::make_unique<InvariantsProbe>(ps); }

}  // namespace harness
