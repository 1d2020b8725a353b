#pragma once
// AdamW, the learning-rate schedule and the fp16 loss scaler. Written out rather
// than taken from torch::optim so the state's dtype is explicit: with pure 16-bit
// parameters (master_weights: false) the state is 16-bit too, and eps = 1e-8
// rounds to zero in fp16 — exactly what the precision audit must catch.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <vector>

namespace nsa {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.01;
};

class AdamW {
 public:
  AdamW(std::vector<at::Tensor> params, AdamWConfig cfg);
  void step(double lr);  // uses each param's .grad(); state in the param's dtype
  const AdamWConfig& config() const { return cfg_; }
  const std::vector<at::Tensor>& exp_avg() const { return m_; }
  const std::vector<at::Tensor>& exp_avg_sq() const { return v_; }
  long long steps() const { return t_; }

 private:
  std::vector<at::Tensor> params_, m_, v_;
  AdamWConfig cfg_;
  long long t_ = 0;
};

// Linear warm-up to `peak`, then cosine to 10% of it at `total` steps.
double lr_at(int step, int warmup, int total, double peak);

// Dynamic loss scaling (init 65536, ×2 after 2000 good steps, ×0.5 on overflow).
class LossScaler {
 public:
  explicit LossScaler(bool enabled, double init = 65536.0, int growth_interval = 2000)
      : enabled_(enabled), scale_(enabled ? init : 1.0), growth_interval_(growth_interval) {}
  double scale() const { return scale_; }
  bool enabled() const { return enabled_; }
  // After backward: returns true when the step must be skipped (non-finite grads).
  bool update(bool grads_finite);
  long long skipped() const { return skipped_; }

 private:
  bool enabled_;
  double scale_;
  int growth_interval_;
  int good_ = 0;
  long long skipped_ = 0;
};

}  // namespace nsa
