#pragma once
// AdamW, the learning-rate schedule and the fp16 loss scaler.
//
// Two implementations of one update rule, chosen by the state's dtype:
//  - fp32/fp64 state (master weights, the production path): ATen's fused
//    multi-tensor AdamW, one pass over parameters, gradients and both moments.
//    Its learning rate and step count are device tensors and the gradient
//    clipping arrives as a device tensor too, so the whole update runs without
//    the host and can be captured in a CUDA graph (nsa/step_graph.h).
//  - 16-bit state (master_weights: false): written out with the _foreach ops,
//    every operation rounding to the state's dtype, so eps = 1e-8 rounds to zero
//    in fp16 — exactly what the precision audit must catch (a fused kernel
//    computes in fp32 and would hide it).
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
  // One update from each param's .grad() (params without one do not move).
  void step(double lr) { schedule(lr); apply(); }

  // The two halves of step(), for a captured step: schedule() advances the
  // step count and writes lr on the host side of a graph; apply() is the
  // device work (no host sync, capturable), every gradient divided by
  // `grad_divisor` first when given (a 0-d fp32 tensor: the clipping factor's
  // inverse, computed on the device).
  void schedule(double lr);
  void apply(const at::Tensor& grad_divisor = at::Tensor());

  const AdamWConfig& config() const { return cfg_; }
  const std::vector<at::Tensor>& exp_avg() const { return m_; }
  const std::vector<at::Tensor>& exp_avg_sq() const { return v_; }
  long long steps() const { return t_; }
  // True when the update is ATen's fused kernel (fp32/fp64 state).
  bool fused() const { return fused_; }

 private:
  void apply_written_out(const at::Tensor& grad_divisor);
  std::vector<at::Tensor> params_, m_, v_;
  AdamWConfig cfg_;
  long long t_ = 0;
  double lr_ = 0.0;
  bool fused_ = false;
  at::Tensor lr_t_, step_t_;  // device copies for the fused kernel: lr (fp64), step count (fp32)
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
