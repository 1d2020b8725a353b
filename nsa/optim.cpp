#include "nsa/optim.h"

#include <ATen/ops/_fused_adamw.h>

#include <cmath>

namespace nsa {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWConfig cfg) : params_(std::move(params)), cfg_(cfg) {
  for (auto& p : params_) {
    m_.push_back(at::zeros_like(p).detach());
    v_.push_back(at::zeros_like(p).detach());
  }
  fused_ = !params_.empty();
  for (auto& p : params_) fused_ = fused_ && (p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble);
  if (fused_) {
    // The fused kernel reads lr and the step count through device pointers
    // (fp32 both), so a captured graph sees each step's values.
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(params_.front().device());
    lr_t_ = at::zeros({}, opts);
    step_t_ = at::zeros({}, opts);
  }
}

void AdamW::schedule(double lr) {
  ++t_;
  lr_ = lr;
  // A fill kernel with lr as its argument: no host sync, and outside any
  // captured graph, so each replay reads this step's value.
  if (fused_) lr_t_.fill_(at::Scalar(lr));
}

void AdamW::apply(const at::Tensor& grad_divisor) {
  at::NoGradGuard no_grad;
  if (!fused_) return apply_written_out(grad_divisor);
  std::vector<at::Tensor> p, g, m, v, steps;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    p.push_back(params_[i]);
    g.push_back(params_[i].grad());
    m.push_back(m_[i]);
    v.push_back(v_[i]);
    steps.push_back(step_t_);  // one shared count: every parameter steps together
  }
  if (p.empty()) return;
  step_t_.add_(1);
  std::optional<at::Tensor> scale;
  if (grad_divisor.defined()) scale = grad_divisor;
  // p ← p·(1 − lr·wd) − lr · m̂ / (√v̂ + eps), m and v as in the written-out
  // path below; gradients divided by `scale` first (and written back divided).
  at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, steps, lr_t_, cfg_.beta1, cfg_.beta2, cfg_.weight_decay,
                    cfg_.eps, /*amsgrad=*/false, /*maximize=*/false, scale, /*found_inf=*/std::nullopt);
}

// The same arithmetic as one loop over the parameters, written with the
// multi-tensor (_foreach_) ops: each line below is one or a few kernel launches
// for the whole model instead of one per parameter. Each op rounds to the
// state's dtype, as the per-parameter ops did.
void AdamW::apply_written_out(const at::Tensor& grad_divisor) {
  const double lr = lr_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  std::vector<at::Tensor> p, g, m, v;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    p.push_back(params_[i]);
    g.push_back(params_[i].grad().to(params_[i].scalar_type()));
    m.push_back(m_[i]);
    v.push_back(v_[i]);
  }
  if (p.empty()) return;
  if (grad_divisor.defined()) g = at::_foreach_div(g, grad_divisor);
  at::_foreach_mul_(m, cfg_.beta1);
  at::_foreach_add_(m, g, 1.0 - cfg_.beta1);                 // m = β1·m + (1-β1)·g
  at::_foreach_mul_(v, cfg_.beta2);
  at::_foreach_addcmul_(v, g, g, 1.0 - cfg_.beta2);          // v = β2·v + (1-β2)·g²
  // All arithmetic in the state's dtype: in fp16 the eps below is 0.
  auto denom = at::_foreach_div(v, bc2);
  at::_foreach_sqrt_(denom);
  at::_foreach_add_(denom, cfg_.eps);                        // sqrt(v̂) + eps
  at::_foreach_mul_(p, 1.0 - lr * cfg_.weight_decay);        // decoupled weight decay
  at::_foreach_addcdiv_(p, at::_foreach_div(m, bc1), denom, -lr);  // p -= lr · m̂ / denom
}

double lr_at(int step, int warmup, int total, double peak) {
  if (warmup > 0 && step <= warmup) return peak * double(step) / double(warmup);
  const double span = std::max(1, total - warmup);
  const double progress = std::min(1.0, double(step - warmup) / span);
  const double floor = 0.1 * peak;
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

bool LossScaler::update(bool grads_finite) {
  if (!enabled_) return false;  // no scaler: a non-finite step goes through and shows
  if (!grads_finite) {
    scale_ *= 0.5;
    good_ = 0;
    ++skipped_;
    return true;
  }
  if (++good_ >= growth_interval_) {
    scale_ *= 2.0;
    good_ = 0;
  }
  return false;
}

}  // namespace nsa
