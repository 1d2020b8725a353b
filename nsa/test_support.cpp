#include "nsa/test_support.h"

#include <chrono>
#include <cstdlib>

namespace nsa::testing {

ModelConfig tiny(const std::string& phi) {
  ModelConfig c = load_model_config("tiny");
  c.nsa.phi = phi;
  return c;
}

LayerCase make_case(const ModelConfig& c, int64_t B, int64_t S, at::ScalarType dtype, uint64_t seed) {
  at::manual_seed(seed);
  auto opts = at::TensorOptions().dtype(dtype);
  LayerCase lc{c, init_nsa_weights(c, opts), at::Tensor()};
  // Larger-than-init weights so attention is far from uniform and selection scores differ.
  {
    at::NoGradGuard ng;
    lc.w.wq.mul_(20);
    for (int b = 0; b < 3; ++b) lc.w.wk[b].mul_(20);
    if (lc.w.phi_k.pe.defined()) lc.w.phi_k.pe.mul_(10);
  }
  lc.x = at::randn({B, S, c.d_model}, opts);
  return lc;
}

double rel_max_err(const at::Tensor& a, const at::Tensor& ref) {
  auto r = ref.to(at::kDouble), x = a.to(at::kDouble);
  double scale = std::max(1.0, r.abs().max().item<double>());
  return (x - r).abs().max().item<double>() / scale;
}

Runtime runtime_with(const std::string& flag, const std::string& value) {
  Runtime rt;
  if (!flag.empty()) rt.flags.set(flag, value);
  rt.resolve();
  return rt;
}

uint64_t fresh_seed() {
  if (const char* s = std::getenv("NSA_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) % 1000003;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::printf("[ seed     ] NSA_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace nsa::testing
