// Causality: replace the tokens after a cut point t and check that no layer's
// output moves at positions ≤ t. One cut is not enough: a path off by one at a
// block boundary leaks only into the position right before it, so the probe
// cuts at the first and last positions, the window edge and both sides of the
// block boundaries near the middle (causality_check.h), all in one batched
// forward (row 0 unperturbed, one row per cut).
#include "harness/probes/causality_check.h"
#include "harness/probes/probes.h"

namespace harness {
namespace {

// Captures each layer's output.
struct LayerCapture : nsa::Observer {
  std::vector<at::Tensor> outs;
  bool wants_tensors() const override { return true; }
  void tensor(std::string_view name, int, int, const at::Tensor& t) override {
    if (name == "block_out") outs.push_back(t.detach());
  }
};

class CausalityProbe : public Probe {
 public:
  void on_start(ProbeContext& ctx) override {
    const int64_t S = ctx.spec.train.seq_len;
    if (S < 2) return;
    const auto& cfg = ctx.model.config();
    const auto cuts = causality_cut_points(S, cfg.nsa, ctx.spec.train.seed + 19);
    nsa::DataSource data(ctx.spec.train.data, ctx.spec.train.seed + 17);
    auto tokens = data.next_batch(1, S).narrow(1, 0, S)[0];
    auto batch = perturbed_batch(tokens, cuts, cfg.vocab, ctx.spec.train.seed + 23).to(ctx.device);
    // Rows of one batch are computed by the same operations, so positions ≤ t
    // agree bit for bit unless something reads the future: float64 on the CPU
    // leaves a margin of seven orders of magnitude above any rounding; on CUDA
    // the kernels run in fp32 and 1e-5 of the scale is ~100 unit roundoffs.
    const bool on_cuda = ctx.device.is_cuda();
    const auto dtype = on_cuda ? at::kFloat : at::kDouble;
    const double rel_tol = on_cuda ? 1e-5 : 1e-9;
    // In forwards whose S×S scores fit the CPU's memory (causality_check.h).
    const int64_t per_forward =
        causality_cuts_per_forward(S, cfg.n_heads, on_cuda, static_cast<int64_t>(cuts.size()));
    int64_t forwards = 0;
    const auto leaks = find_leaks_in_forwards(batch, cuts, per_forward, rel_tol, [&](const at::Tensor& rows) {
      LayerCapture capture;
      nsa::Runtime rt = ctx.rt;
      rt.observer = &capture;
      at::NoGradGuard ng;
      ctx.model.forward(rows, dtype, rt);
      ++forwards;
      return capture.outs;
    });
    nlohmann::json rows = nlohmann::json::array();
    for (auto& l : leaks)
      rows.push_back({{"cut", l.cut}, {"first_changed_position", l.first_changed}, {"layer", l.layer},
                      {"max_rel_change", l.change}});
    ctx.table("causality", {{"seq_len", S}, {"cut_points", cuts}, {"tolerance", rel_tol}, {"forwards", forwards},
                            {"leaks", rows}});
    if (leaks.empty()) return;
    const auto& first = leaks.front();
    Finding f;
    f.code = std::string(reason::causality);
    f.severity = Severity::blocking;
    f.title = "tokens after position " + std::to_string(first.cut) + " change layer " + std::to_string(first.layer) +
              " output at position " + std::to_string(first.first_changed);
    f.detail = "Tokens after position " + std::to_string(first.cut) + " were replaced; layer " +
               std::to_string(first.layer) + " output changed at position " + std::to_string(first.first_changed) +
               " (≤ " + std::to_string(first.cut) + ") by " + fmt_double(first.change) +
               " of its scale (tolerance " + fmt_double(rel_tol) + "). Some branch attends to keys it cannot have "
               "seen yet. " + std::to_string(leaks.size()) + " of " + std::to_string(cuts.size()) +
               " cut points leak.";
    f.location = "layer " + std::to_string(first.layer) + " / position " + std::to_string(first.first_changed);
    f.evidence = {{"cut_point", first.cut}, {"first_changed_position", first.first_changed},
                  {"layer", first.layer}, {"max_rel_change", first.change}, {"cut_points", cuts}, {"leaks", rows}};
    ctx.report(f);
  }
};

}  // namespace

std::unique_ptr<Probe> make_causality_probe(const ProbeSpec&) { return std::make_unique<CausalityProbe>(); }

}  // namespace harness
