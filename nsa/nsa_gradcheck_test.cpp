// Finite differences in float64 against autograd for the NSA layer.
#include "nsa/nsa_layer.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

TEST(GradCheck, LayerGradientsMatchCentralDifferences) {
  auto lc = make_case(tiny(), 1, 37, at::kDouble, fresh_seed());
  lc.x.requires_grad_();
  at::manual_seed(7);
  auto probe = at::randn({1, 37, lc.cfg.d_model}, at::kDouble);
  for (auto path : {Path::batched, Path::sequential, Path::reference}) {
    SCOPED_TRACE(path_name(path));
    auto rt = runtime_with();
    auto f = [&]() { return (nsa_attention(lc.w, lc.x, lc.cfg, rt, 0, path) * probe).sum(); };
    std::vector<std::pair<std::string, at::Tensor>> inputs = {{"x", lc.x}};
    for (auto& kv : lc.w.named()) inputs.push_back(kv);
    for (auto& [name, t] : inputs) if (t.grad().defined()) t.mutable_grad().zero_();
    f().backward();
    for (auto& [name, t] : inputs) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(t.grad().defined());
      auto flat = t.detach().view({-1});
      auto g = t.grad().view({-1});
      // A few coordinates per tensor keep the test fast; which ones varies with the seed.
      auto coords = at::randint(0, flat.numel(), {3}, at::kLong);
      for (int i = 0; i < 3; ++i) {
        int64_t k = coords[i].item<int64_t>();
        const double eps = 1e-6, orig = flat[k].item<double>();
        at::NoGradGuard ng;
        flat[k] = orig + eps;
        double up = f().item<double>();
        flat[k] = orig - eps;
        double down = f().item<double>();
        flat[k] = orig;
        double numeric = (up - down) / (2 * eps), analytic = g[k].item<double>();
        EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << "coordinate " << k;
      }
    }
  }
}

}  // namespace
}  // namespace nsa
