#include "nsa/optim.h"

#include <cmath>

namespace nsa {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWConfig cfg) : params_(std::move(params)), cfg_(cfg) {
  for (auto& p : params_) {
    m_.push_back(at::zeros_like(p).detach());
    v_.push_back(at::zeros_like(p).detach());
  }
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    if (!p.grad().defined()) continue;
    auto g = p.grad().to(p.scalar_type());
    m_[i].mul_(cfg_.beta1).add_(g, 1.0 - cfg_.beta1);
    v_[i].mul_(cfg_.beta2).addcmul_(g, g, 1.0 - cfg_.beta2);
    // All arithmetic in the state's dtype: in fp16 the eps below is 0.
    auto denom = (v_[i] / bc2).sqrt_().add_(cfg_.eps);
    p.mul_(1.0 - lr * cfg_.weight_decay);
    p.addcdiv_(m_[i] / bc1, denom, -lr);
  }
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
