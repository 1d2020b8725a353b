// AdamW against the update rule written out per element in float64 (Loshchilov &
// Hutter, decoupled weight decay; bias-corrected moments), and the fp16 case the
// precision audit is about, against IEEE fp16.
#include "nsa/optim.h"

#include <gtest/gtest.h>

#include <cmath>

namespace nsa {
namespace {

TEST(AdamW, MatchesTheUpdateRuleElementByElement) {
  at::manual_seed(5);
  const AdamWConfig cfg;
  // Several shapes, one without a gradient (it must not move).
  std::vector<at::Tensor> params = {at::randn({7, 3}), at::randn({5}), at::randn({2, 2, 2}), at::randn({4})};
  std::vector<at::Tensor> ref;
  for (auto& p : params) ref.push_back(p.to(at::kDouble).clone());
  std::vector<at::Tensor> m_ref, v_ref;
  for (auto& p : ref) m_ref.push_back(at::zeros_like(p)), v_ref.push_back(at::zeros_like(p));
  AdamW opt(params, cfg);
  const double lrs[] = {1e-2, 3e-3, 5e-2};
  for (int t = 1; t <= 3; ++t) {
    std::vector<at::Tensor> grads;
    for (size_t i = 0; i < params.size(); ++i) {
      auto g = i == 3 ? at::Tensor() : at::randn(params[i].sizes());
      params[i].mutable_grad() = g;
      grads.push_back(g);
    }
    opt.step(lrs[t - 1]);
    const double lr = lrs[t - 1], bc1 = 1 - std::pow(cfg.beta1, t), bc2 = 1 - std::pow(cfg.beta2, t);
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!grads[i].defined()) continue;
      auto p = ref[i].view(-1), m = m_ref[i].view(-1), v = v_ref[i].view(-1);
      auto g = grads[i].to(at::kDouble).contiguous().view(-1);
      for (int64_t k = 0; k < p.numel(); ++k) {
        const double gk = g[k].item<double>();
        const double mk = cfg.beta1 * m[k].item<double>() + (1 - cfg.beta1) * gk;
        const double vk = cfg.beta2 * v[k].item<double>() + (1 - cfg.beta2) * gk * gk;
        m[k] = mk;
        v[k] = vk;
        const double pk = p[k].item<double>() * (1 - lr * cfg.weight_decay);
        p[k] = pk - lr * (mk / bc1) / (std::sqrt(vk / bc2) + cfg.eps);
      }
    }
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(at::allclose(params[i].to(at::kDouble), ref[i], 1e-6, 1e-6)) << "step " << t << " param " << i;
    EXPECT_TRUE(at::allclose(opt.exp_avg()[0].to(at::kDouble), m_ref[0], 1e-6, 1e-7));
    EXPECT_TRUE(at::allclose(opt.exp_avg_sq()[0].to(at::kDouble), v_ref[0], 1e-6, 1e-9));
  }
}

TEST(AdamW, PureFp16StateTurnsAZeroGradientIntoNaN) {
  // v = 0 and m = 0 for an element whose gradient is 0: the update is
  // 0 / (sqrt(0) + eps). eps = 1e-8 is 0 in fp16 (below half the smallest
  // subnormal, 2^-25), so 0/0 = NaN; in fp32 the update is 0.
  for (auto dtype : {at::kHalf, at::kFloat}) {
    auto p = at::ones({3}, dtype);
    AdamW opt({p}, AdamWConfig{});
    p.mutable_grad() = at::tensor({0.0, 1.0, -1.0}).to(dtype);
    opt.step(1e-3);
    const bool nan0 = std::isnan(p[0].item<float>());
    EXPECT_EQ(nan0, dtype == at::kHalf) << c10::toString(dtype);
    EXPECT_TRUE(std::isfinite(p[1].item<float>()) && std::isfinite(p[2].item<float>()));
  }
}

}  // namespace
}  // namespace nsa
