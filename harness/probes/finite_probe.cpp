// Finite probe: finds the first non-finite value of a run — in the forward
// activations (layer, branch), the loss, the gradients or the optimizer update —
// and re-runs that step in other precisions to tell a range problem (finite in
// a wider type) from a logic problem (non-finite everywhere).
#include <cmath>
#include <optional>

#include "harness/probes/probes.h"
#include "harness/probes/tensor_checks.h"

namespace harness {
namespace {

const char* kBranches[3] = {"cmp", "slc", "win"};

std::string precision_of(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return "fp16";
    case at::kBFloat16: return "bf16";
    case at::kFloat: return "fp32";
    case at::kDouble: return "fp64";
    default: return c10::toString(t);
  }
}

class FiniteProbe : public Probe {
 public:
  explicit FiniteProbe(const ProbeSpec& ps) : spec_(ps) {}
  // `every: N` samples the full search (activations, a parameter snapshot for
  // the re-run, one scan over every tensor); the steps between are checked
  // through the loss and the gradient norm the step returned — a non-finite
  // gradient makes the norm non-finite — and searched only when those are.
  bool wants_tensors(int step) const override { return !reported_ && probe_due(spec_, step); }
  bool wants_params_before(int step) const override { return !reported_ && probe_due(spec_, step); }

  void on_step_end(ProbeContext& ctx) override {
    if (std::isfinite(ctx.stats.loss) && !first_loss_) first_loss_ = std::abs(ctx.stats.loss);
    if (reported_) return;
    if (!probe_due(spec_, ctx.step) && std::isfinite(ctx.stats.loss) && std::isfinite(ctx.stats.grad_norm)) return;
    if (nothing_to_report(ctx)) return;
    std::string location, stage;
    nlohmann::json ev = nlohmann::json::object();
    // 1. forward activations, in the order the model computed them.
    for (auto& e : ctx.tap.entries) {
      if (e.name == "block_idx" || all_finite(e.value)) continue;
      location = "layer " + std::to_string(e.layer) + (e.branch >= 0 ? std::string(" / ") + kBranches[e.branch] : "") +
                 " / " + e.name;
      stage = "forward";
      auto bad = at::logical_not(at::isfinite(e.value));
      ev = {{"tensor", e.name}, {"layer", e.layer}, {"non_finite_count", bad.sum().item<int64_t>()},
            {"numel", e.value.numel()}, {"has_nan", at::isnan(e.value).any().item<bool>()}};
      break;
    }
    // 2. the loss.
    if (stage.empty() && !std::isfinite(ctx.stats.loss)) {
      stage = "forward";
      location = "loss";
      ev = {{"loss", std::isnan(ctx.stats.loss) ? "nan" : "inf"}};
    }
    // 3. gradients (an fp16 overflow that the scaler skipped is not a failure).
    if (stage.empty() && !ctx.stats.skipped) {
      for (auto& [name, p] : ctx.model.parameters())
        if (p.grad().defined() && !all_finite(p.grad())) {
          stage = "backward";
          location = "grad of " + name;
          break;
        }
    }
    // 4. the optimizer: state and updated parameters.
    if (stage.empty()) {
      const auto& params = ctx.model.parameters();
      const auto& m = ctx.trainer.optimizer().exp_avg();
      const auto& v = ctx.trainer.optimizer().exp_avg_sq();
      for (size_t i = 0; i < params.size(); ++i) {
        if (!all_finite(params[i].second) || !all_finite(m[i]) || !all_finite(v[i])) {
          stage = "optimizer";
          location = "AdamW update of " + params[i].first;
          ev = {{"param_dtype", c10::toString(params[i].second.scalar_type())},
                {"exp_avg_sq_zero_fraction", (v[i] == 0).to(at::kFloat).mean().item<double>()}};
          break;
        }
      }
    }
    if (stage.empty()) return;
    // The stages ran forward → backward → optimizer; what the later ones show
    // may only be the consequence of an earlier one. A gradient norm that was
    // already non-finite before clipping puts the origin in backward; a loss
    // that exploded by orders of magnitude puts it in forward, even when every
    // value it produced was still representable.
    if (stage == "optimizer" && !ctx.stats.skipped && !std::isfinite(ctx.stats.grad_norm)) {
      stage = "backward";
      location = "gradient norm before clipping (" + fmt_double(ctx.stats.grad_norm) + ")";
    }
    if ((stage == "optimizer" || stage == "backward") && exploded(ctx.stats.loss)) {
      ev["consequence"] = stage + ": " + location;
      stage = "forward";
      location = "loss exploded to " + fmt_double(ctx.stats.loss) + " (first step: " + fmt_double(first_loss_.value_or(NAN)) + ")";
    }
    reported_ = true;
    Finding f;
    f.code = std::string(reason::non_finite);
    f.severity = ctx.spec.gates.require_finite ? Severity::blocking : Severity::warning;
    f.step = ctx.step;
    f.location = stage + ": " + location;
    f.title = "first non-finite value at step " + std::to_string(ctx.step) + " in " + stage + " (" + location + ")";
    ev["stage"] = stage;
    ev["loss"] = std::isfinite(ctx.stats.loss) ? nlohmann::json(ctx.stats.loss) : nlohmann::json("non-finite");
    auto rerun = rerun_elsewhere(ctx);
    ev["rerun"] = rerun;
    f.evidence = ev;
    f.detail = "The first non-finite value of the run appeared at step " + std::to_string(ctx.step) + " in the " +
               stage + " (" + location + "). " + verdict_text(ctx, rerun, stage);
    ctx.report(f);
  }

 private:
  // The usual step is clean: one device-side verdict over every tensor the
  // ordered search below would look at costs one host sync instead of one per
  // tensor (hundreds per step on a 12-layer model). Only a step with a
  // non-finite value somewhere pays for finding the first one.
  static bool nothing_to_report(ProbeContext& ctx) {
    if (!std::isfinite(ctx.stats.loss)) return false;
    std::vector<at::Tensor> tensors;
    auto add = [&](const at::Tensor& t) {
      // No detach: nothing here records autograd history, and ~1 300 detached
      // handles cost ~1 ms of host time a step.
      if (t.defined() && t.numel() > 0 && t.is_floating_point()) tensors.push_back(t);
    };
    for (auto& e : ctx.tap.entries)
      if (e.name != "block_idx") add(e.value);
    if (!ctx.stats.skipped)
      for (auto& [name, p] : ctx.model.parameters()) add(p.grad());
    for (auto& [name, p] : ctx.model.parameters()) add(p);
    for (auto& t : ctx.trainer.optimizer().exp_avg()) add(t);
    for (auto& t : ctx.trainer.optimizer().exp_avg_sq()) add(t);
    return all_finite_together(tensors);
  }

  // Re-runs the step's forward and backward from the parameters as they were
  // before it, in the other precisions, and says where it stays finite.
  nlohmann::json rerun_elsewhere(ProbeContext& ctx) {
    nlohmann::json out = nlohmann::json::object();
    if (ctx.params_before.empty() || !ctx.batch.defined()) return out;
    const auto run_dtype = ctx.trainer.compute();
    std::vector<at::ScalarType> others;
    if (run_dtype == at::kFloat) others = {at::kDouble};
    else others = {at::kFloat, run_dtype == at::kHalf ? at::kBFloat16 : at::kHalf};
    for (auto dt : others) {
      try {
        auto pdt = dt == at::kDouble ? at::kDouble : at::kFloat;
        nsa::Model copy(ctx.model.config(), at::TensorOptions().dtype(pdt).device(ctx.device));
        {
          at::NoGradGuard ng;
          for (size_t i = 0; i < copy.parameters().size(); ++i) copy.parameters()[i].second.copy_(ctx.params_before[i]);
        }
        nsa::Runtime rt = ctx.rt;
        rt.observer = nullptr;
        auto loss = copy.loss(ctx.batch, dt, rt);
        loss.backward();
        bool finite = std::isfinite(loss.item<double>());
        for (auto& [name, p] : copy.parameters()) finite = finite && all_finite(p.grad());
        out[precision_of(dt)] = finite ? "finite" : "non-finite";
      } catch (const std::exception& e) {
        out[precision_of(dt)] = std::string("error: ") + e.what();
      }
    }
    return out;
  }

  static std::string verdict_text(ProbeContext& ctx, const nlohmann::json& rerun, const std::string& stage) {
    if (rerun.empty()) return "";
    std::string finite_in, nonfinite_in;
    for (auto& [k, v] : rerun.items()) {
      (v == "finite" ? finite_in : nonfinite_in) += (v == "finite" ? (finite_in.empty() ? "" : ", ") : (nonfinite_in.empty() ? "" : ", ")) + k;
    }
    const std::string here = precision_of(ctx.trainer.compute());
    if (stage == "optimizer")
      return "Forward and backward of the same step are finite in " + (finite_in.empty() ? std::string("no other precision") : finite_in) +
             "; the non-finite value is produced by the optimizer update itself (see the precision audit).";
    if (nonfinite_in.empty())
      return "Re-running the step from the same parameters is finite in " + finite_in + ": a range problem of " + here + ".";
    if (finite_in.empty())
      return "Re-running the step is non-finite in " + nonfinite_in + " too: a logic problem, not a precision one.";
    return "Re-running the step is finite in " + finite_in + " but not in " + nonfinite_in + ".";
  }

  // A loss this many times the run's first loss (and above kHugeLoss) has
  // exploded: cross-entropy over a 256-byte vocabulary starts near ln 256 ≈ 5.5.
  static constexpr double kExplosionFactor = 1e3;
  static constexpr double kHugeLoss = 1e3;
  bool exploded(double loss) const {
    if (!std::isfinite(loss) || std::abs(loss) <= kHugeLoss) return false;
    // Exploded against the run's start, or absurd on its own (the first step may be the one that exploded).
    return std::abs(loss) > kExplosionFactor * first_loss_.value_or(INFINITY) || std::abs(loss) > kHugeLoss * kExplosionFactor;
  }

  ProbeSpec spec_;
  bool reported_ = false;
  std::optional<double> first_loss_;
};

}  // namespace

std::unique_ptr<Probe> make_finite_probe(const ProbeSpec& ps) { return std::make_unique<FiniteProbe>(ps); }

}  // namespace harness
