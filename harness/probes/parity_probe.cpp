// Parity: every layer's path against the independent oracle
// (harness/probes/oracle), at the start of the run and again on the trained
// weights at its end. The oracle shares no code with the model, so a bug in a
// helper that every path and nsa_reference share shows up here too.
//
// Two inputs per layer: random tokens scaled so that attention logits have a
// spread of order one (at init the weights are so small that every softmax is
// nearly uniform and every selection a near-tie, which would hide a wrong
// selection), and all zeros, where every compressed block gets the same weight
// and, at positions where those weights are exact, the tie rule alone decides.
//
// On the CPU the path runs in float64 (any difference above rounding is a
// bug); on CUDA in the training dtype, through every kernel version the cell
// can route to, with tolerances from that dtype's unit roundoff.
#include <set>

#include "harness/probes/parity_check.h"
#include "harness/probes/probes.h"

namespace harness {
namespace {

// Collects what nsa_attention reports: the gates and which implementation ran.
struct PathCapture : nsa::Observer {
  at::Tensor gates;
  std::map<std::string, std::string> routes;
  bool wants_tensors() const override { return true; }
  void tensor(std::string_view name, int, int, const at::Tensor& t) override {
    if (name == "gates") gates = t.detach();
  }
  void route(std::string_view branch, std::string_view impl) override { routes[std::string(branch)] = impl; }
};

// One way the cell's layer can be computed: the path, and on CUDA the kernel version.
struct Variant {
  nsa::Path path;
  std::string label;  // "batched", "cuda (v1)", …
  nsa::Runtime rt;
};

std::vector<Variant> variants(const nsa::Runtime& cell_rt, const at::Tensor& x) {
  nsa::Runtime rt = cell_rt;
  rt.observer = nullptr;
  const nsa::Path path = nsa::choose_path(rt, x);
  if (path != nsa::Path::cuda) return {{path, nsa::path_name(path), rt}};
  // v2 (tensor cores) where it tiles, v1 elsewhere — unless the cell forces v1,
  // in which case v1 is the only version it can reach.
  std::vector<Variant> out;
  if (!rt.flags.get_bool("NSA_CUDA_KERNEL_V1")) {
    Variant v2{path, "cuda (v2 where it applies)", rt};
    v2.rt.flags.set("NSA_CUDA_KERNEL_V1", "0");
    out.push_back(v2);
  }
  Variant v1{path, "cuda (v1)", rt};
  v1.rt.flags.set("NSA_CUDA_KERNEL_V1", "1");
  out.push_back(v1);
  return out;
}

PathRun run_path(const Variant& v, const nsa::NsaWeights& w, const at::Tensor& x, const nsa::ModelConfig& c, int layer,
                 std::map<std::string, std::string>& routes) {
  PathCapture capture;
  nsa::Runtime rt = v.rt;
  rt.observer = &capture;
  PathRun run;
  run.out = nsa::nsa_attention(w, x, c, rt, layer, v.path, &run.branches);
  run.gates = capture.gates;
  routes = capture.routes;
  return run;
}

// Scale for random inputs so that window logits q·k/√dk have a spread of 1.5
// (bilinear in x: the spread grows with the square of the scale).
double input_scale(const nsa::NsaWeights& w, const nsa::ModelConfig& c, const at::Tensor& x) {
  auto q = at::matmul(x, w.wq).view({-1, c.n_heads, c.d_k}).narrow(1, 0, 1).squeeze(1);
  auto k = at::matmul(x, w.wk[2]).view({-1, c.n_kv_groups, c.d_k}).narrow(1, 0, 1).squeeze(1);
  const double spread = (at::matmul(q, k.t()) / std::sqrt(double(c.d_k))).std().item<double>();
  return spread > 0 && std::isfinite(spread) ? std::sqrt(1.5 / spread) : 1.0;
}

std::string where_of(const ParityMismatch& m) {
  if (m.what == "selection") return "group " + std::to_string(m.head) + " at position " + std::to_string(m.position);
  if (m.what == "combine") return "position " + std::to_string(m.position);
  return "head " + std::to_string(m.head) + " at position " + std::to_string(m.position);
}

class ParityProbe : public Probe {
 public:
  void on_start(ProbeContext& ctx) override { check(ctx, "initial weights", true); }
  // Training moves the weights (gates sharpen, attention peaks): check them again.
  void on_run_end(ProbeContext& ctx) override { check(ctx, "trained weights", false); }

 private:
  void check(ProbeContext& ctx, const std::string& when, bool when_start) {
    const auto& cfg = ctx.model.config();
    const int64_t S = ctx.spec.train.seq_len;
    const auto positions = parity_positions(S, cfg.nsa, 256, 64, ctx.spec.train.seed + 31);
    const int64_t B = S <= 256 ? 2 : 1;  // two rows also catch a path that mixes the batch
    const bool on_cuda = ctx.device.is_cuda();
    const auto fast_dt = on_cuda ? ctx.trainer.compute() : at::kDouble;
    const int64_t longest_sum = std::max<int64_t>({cfg.d_model, int64_t(cfg.nsa.cmp_block) * cfg.d_k, S});
    const auto tol = parity_tolerance(fast_dt, longest_sum);
    at::manual_seed(ctx.spec.train.seed + 29);
    auto noise = at::randn({B, S, cfg.d_model}, at::kDouble);
    nlohmann::json rows = nlohmann::json::array();
    at::NoGradGuard ng;
    for (int l = 0; l < cfg.n_layers; ++l) {
      auto w_fast = ctx.model.attention_weights(l).to(ctx.device, fast_dt);
      // The oracle sees exactly the rounded weights and inputs the path sees, so the
      // gap is the path's arithmetic alone.
      auto w_ref = w_fast.to(at::kCPU, at::kDouble);
      const double s = input_scale(w_ref, cfg, noise);
      struct Input {
        const char* name;
        at::Tensor x;
        ParityOptions opts;
      };
      ParityOptions random_opts, zero_opts;
      zero_opts.compare_outputs = false;
      zero_opts.exact_ties_where_representable = true;  // there the lower index must win
      std::vector<Input> inputs = {{"random", (noise * s).to(ctx.device, fast_dt), random_opts}};
      // With a zero input every query is zero whatever the weights, so the tie
      // check says nothing new on trained weights; one row is enough.
      if (when_start)
        inputs.push_back({"zeros", at::zeros({1, S, cfg.d_model}, at::TensorOptions().dtype(fast_dt).device(ctx.device)),
                          zero_opts});
      for (auto& in : inputs) {
        auto x_ref = in.x.to(at::kCPU, at::kDouble);
        const auto ref = oracle::nsa_oracle(w_ref, x_ref, cfg, positions);
        for (auto& v : variants(ctx.rt, in.x)) {
          std::map<std::string, std::string> routes;
          const auto run = run_path(v, w_fast, in.x, cfg, l, routes);
          const auto lp = compare_layer(ref, run, w_ref, cfg, tol, in.opts);
          rows.push_back({{"layer", l}, {"path", v.label}, {"input", in.name}, {"routes", routes},
                          {"checks", lp.summary}, {"tolerance", tol.derivation()}});
          for (auto& m : lp.mismatches) report(ctx, when, v.label, l, in.name, S, m, tol, routes);
        }
      }
    }
    ctx.table("parity", {{"when", when}, {"seq_len", S}, {"batch", B}, {"positions", positions.size()},
                         {"dtype", tol.dtype}, {"layers", rows}});
  }

  // One finding per (path, what): the first layer where it shows, at start or end.
  void report(ProbeContext& ctx, const std::string& when, const std::string& path, int layer, const std::string& input,
              int64_t S, const ParityMismatch& m, const ParityTolerance& tol,
              const std::map<std::string, std::string>& routes) {
    if (!reported_.insert(path + "/" + m.what).second) return;
    Finding f;
    f.code = std::string(reason::parity);
    f.severity = Severity::blocking;
    const bool branch = m.what == "cmp" || m.what == "slc" || m.what == "win";
    const std::string what = branch ? "branch " + m.what : m.what;
    f.title = path + " path disagrees with the oracle in layer " + std::to_string(layer) + " (" + what + ", " +
              where_of(m) + ")";
    if (m.what == "selection")
      f.detail = "On a " + input + " input of S=" + std::to_string(S) + " (" + when + "), " + where_of(m) +
                 " selected blocks " + m.evidence["selected"].dump() + " where the oracle, from DESIGN.md §2, selects " +
                 m.evidence["expected"].dump() + " (scores " + m.evidence["scores"].dump() +
                 "); " + (m.evidence["exact_scores"].get<bool>()
                            ? std::string("there every score is exact, so equal scores are a true tie and the lower "
                                          "index must win.")
                            : "the scores are not within the relative tie margin " +
                                  fmt_double(m.evidence["tie_margin_rel"].get<double>()) + " that rounding could explain.");
    else
      f.detail = "On a " + input + " input of S=" + std::to_string(S) + " (" + when + "), the " + path + " path's " +
                 what + " at " + where_of(m) + " is off by " + fmt_double(m.error) +
                 (m.what == "gate" ? " (absolute)" : " of the output scale") + " against a tolerance there of " +
                 fmt_double(m.tolerance) + " (" + tol.derivation() + ").";
    f.location = "layer " + std::to_string(layer) + " / " + m.what + " / position " + std::to_string(m.position);
    f.evidence = m.evidence;
    f.evidence["path"] = path;
    f.evidence["layer"] = layer;
    f.evidence["position"] = m.position;
    f.evidence["input"] = input;
    f.evidence["when"] = when;
    f.evidence["routes"] = routes;
    ctx.report(f);
  }

  std::set<std::string> reported_;
};

}  // namespace

std::unique_ptr<Probe> make_parity_probe(const ProbeSpec&) { return std::make_unique<ParityProbe>(); }

}  // namespace harness
