// Precision audit: what the run computes in, whether AdamW's eps survives in the
// optimizer state's dtype, and how the fp16 loss scale behaved.
#include "harness/probes/probes.h"

namespace harness {
namespace {

std::string dtype_name(at::ScalarType t) { return c10::toString(t); }

class PrecisionProbe : public Probe {
 public:
  void on_start(ProbeContext& ctx) override {
    auto param = ctx.trainer.param_dtype(), compute = ctx.trainer.compute();
    const double eps = ctx.trainer.optimizer().config().eps;
    // Round eps through the state dtype exactly as the optimizer's arithmetic will.
    const double eps_in_state = at::full({1}, eps, at::TensorOptions().dtype(param)).to(at::kDouble).item<double>();
    audit_ = {{"param_dtype", dtype_name(param)},
              {"compute_dtype", dtype_name(compute)},
              {"optimizer_state_dtype", dtype_name(param)},
              {"master_weights", ctx.spec.train.master_weights},
              {"adamw_eps", eps},
              {"adamw_eps_in_state_dtype", eps_in_state},
              {"loss_scaling", ctx.trainer.scaler().enabled()}};
    if (eps_in_state == 0.0) {
      Finding f;
      f.code = std::string(reason::adamw_eps_underflow);
      f.severity = Severity::warning;
      f.title = "AdamW eps " + fmt_double(eps) + " rounds to 0 in " + dtype_name(param);
      f.detail = "Parameters and optimizer state are " + dtype_name(param) +
                 " (master_weights: false). In that dtype eps = " + fmt_double(eps) +
                 " is 0, so any coordinate whose second moment underflows divides by zero and the update becomes "
                 "inf/NaN. Keep fp32 master weights (master_weights: true) or use eps ≥ 1e-4 in fp16.";
      f.location = "optimizer/AdamW";
      f.evidence = audit_;
      ctx.report(f);
    }
  }
  void on_step_end(ProbeContext& ctx) override { scales_.push_back(ctx.stats.loss_scale); skipped_ += ctx.stats.skipped; }
  void on_run_end(ProbeContext& ctx) override {
    audit_["loss_scale_history"] = scales_;
    audit_["skipped_steps"] = skipped_;
    if (skipped_ > 0) {
      Finding f;
      f.code = std::string(reason::loss_scale_skips);
      f.severity = Severity::warning;
      f.title = std::to_string(skipped_) + " optimizer step(s) skipped on fp16 gradient overflow";
      f.detail = "Dynamic loss scaling skipped steps whose gradients overflowed and halved the scale; counted, not a failure.";
      f.evidence = {{"loss_scale_history", scales_}};
      ctx.report(f);
    }
    ctx.table("precision", audit_);
  }

 private:
  nlohmann::json audit_;
  std::vector<double> scales_;
  int skipped_ = 0;
};

}  // namespace

std::unique_ptr<Probe> make_precision_probe(const ProbeSpec&) { return std::make_unique<PrecisionProbe>(); }

}  // namespace harness
