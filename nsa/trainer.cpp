#include "nsa/trainer.h"

#include <torch/csrc/autograd/anomaly_mode.h>

#include <cmath>
#include <stdexcept>

namespace nsa {

Precision precision_from_string(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp16") return Precision::fp16;
  throw std::invalid_argument("unknown precision '" + s + "' (expected fp32, bf16 or fp16)");
}

at::ScalarType compute_dtype(Precision p) {
  switch (p) {
    case Precision::fp32: return at::kFloat;
    case Precision::bf16: return at::kBFloat16;
    case Precision::fp16: return at::kHalf;
  }
  return at::kFloat;
}

at::ScalarType param_dtype_for(const TrainConfig& c) {
  return c.master_weights ? at::kFloat : compute_dtype(c.precision);
}

Trainer::Trainer(Model& model, TrainConfig cfg)
    : model_(model), cfg_(cfg), scaler_(cfg.precision == Precision::fp16) {
  std::vector<at::Tensor> params;
  for (auto& [name, p] : model_.parameters()) params.push_back(p);
  opt_ = std::make_unique<AdamW>(params, AdamWConfig{0.9, 0.95, 1e-8, cfg_.weight_decay});
}

at::ScalarType Trainer::param_dtype() const { return param_dtype_for(cfg_); }

StepStats Trainer::step(int step, const at::Tensor& batch, Runtime& rt) {
  StepStats st;
  rt.step = step;
  st.lr = lr_at(step, cfg_.warmup_steps, cfg_.steps, cfg_.lr);
  st.loss_scale = scaler_.scale();
  for (auto& [name, p] : model_.parameters()) p.mutable_grad() = at::Tensor();

  at::Tensor loss;
  {
    Phase phase(rt, "forward");
    loss = model_.loss(batch, compute(), rt);
  }
  {
    Phase phase(rt, "backward");
    const bool anomaly = rt.flags.get_bool("NSA_DETECT_ANOMALY");
    torch::autograd::AnomalyMode::set_enabled(anomaly);
    (scaler_.enabled() ? loss * scaler_.scale() : loss).backward();
    torch::autograd::AnomalyMode::set_enabled(false);
  }
  std::vector<at::Tensor> grads;
  for (auto& [name, p] : model_.parameters())
    if (p.grad().defined()) grads.push_back(p.grad());
  if (sync_) {
    Phase phase(rt, "allreduce");
    sync_->reduce(step, grads, loss);
  }
  Phase phase(rt, "optimizer");
  // One host sync per step for the loss and the gradient norm: the optimizer needs both.
  if (rt.observer) rt.observer->sync_point("loss and grad norm");
  st.loss = loss.item<double>();
  at::Tensor sq;
  {
    at::NoGradGuard ng;
    // One multi-tensor pass for every gradient's L2 norm, in fp32 whatever the
    // gradients' dtype (a 16-bit sum of squares overflows on ordinary values).
    sq = grads.empty() ? at::zeros({}, at::kFloat)
                       : at::stack(at::_foreach_norm(grads, 2, at::kFloat)).pow(2).sum();
  }
  double norm = std::sqrt(sq.item<double>()) / scaler_.scale();
  st.grad_norm = norm;
  st.skipped = scaler_.update(std::isfinite(norm));
  if (st.skipped) return st;
  {
    at::NoGradGuard ng;
    // Unscale and clip in one multiply.
    double factor = 1.0 / scaler_.scale();
    if (std::isfinite(norm) && norm > cfg_.grad_clip) factor *= cfg_.grad_clip / (norm + 1e-6);
    if (factor != 1.0 && !grads.empty()) at::_foreach_mul_(grads, factor);
  }
  opt_->step(st.lr);
  if (sync_) sync_->after_update(step, model_);
  return st;
}

}  // namespace nsa
