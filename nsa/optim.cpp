#include "nsa/optim.h"

#include <cmath>

namespace nsa {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWConfig cfg) : params_(std::move(params)), cfg_(cfg) {
  for (auto& p : params_) {
    m_.push_back(at::zeros_like(p).detach());
    v_.push_back(at::zeros_like(p).detach());
  }
}

// The same arithmetic as one loop over the parameters, written with the
// multi-tensor (_foreach_) ops: each line below is one or a few kernel launches
// for the whole model instead of one per parameter (a 12-layer model has ~300
// parameters, so ~3000 launches per step otherwise). Each op rounds to the
// state's dtype, as the per-parameter ops did.
void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++t_;
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
