// Every input of every autograd wrapper gets a finite, non-zero gradient, and
// gradients reach leaves upstream of the wrapper (the wrapper is in the graph).
#include <cmath>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

struct Leaves {
  at::Tensor x, wq, wk, wv;  // q = x wq, k = x wk, v = x wv: grads must reach all four
};

Leaves make_leaves(int64_t B, int64_t S, int64_t D, int64_t H, int64_t G, int64_t dh, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto mk = [&](at::IntArrayRef sizes) {
    return (at::randn(sizes, gen) * 0.3).to(at::kCUDA).to(at::kBFloat16).requires_grad_(true);
  };
  return {mk({B, S, D}), mk({D, H * dh}), mk({D, G * dh}), mk({D, G * dh})};
}

void expect_all_grads(const Leaves& L, const at::Tensor& o) {
  ASSERT_TRUE(o.requires_grad()) << "wrapper output is not attached to autograd";
  (o.to(at::kFloat) * at::randn_like(o, at::kFloat)).sum().backward();
  const std::pair<const char*, at::Tensor> named[] = {{"x", L.x}, {"wq", L.wq}, {"wk", L.wk}, {"wv", L.wv}};
  for (const auto& [name, t] : named) {
    ASSERT_TRUE(t.grad().defined()) << name << " got no gradient";
    EXPECT_TRUE(at::isfinite(t.grad()).all().item<bool>()) << name << " gradient not finite";
    EXPECT_GT(t.grad().abs().max().item<float>(), 0.f) << name << " gradient is all zero";
  }
}

constexpr int64_t B = 2, S = 96, D = 32, H = 4, G = 2, dh = 32;

at::Tensor heads(const at::Tensor& x, const at::Tensor& w, int64_t n) {
  return at::matmul(x, w).view({B, S, n, dh});
}

TEST(AutogradCoverage, WindowAttention) {
  NSA_REQUIRE_CUDA();
  const Leaves L = make_leaves(B, S, D, H, G, dh, 1);
  const at::Tensor o = window_attention(heads(L.x, L.wq, H), heads(L.x, L.wk, G), heads(L.x, L.wv, G), 16,
                                        1.0 / std::sqrt(double(dh)));
  expect_all_grads(L, o);
}

TEST(AutogradCoverage, CompressedAttention) {
  NSA_REQUIRE_CUDA();
  const Leaves L = make_leaves(B, S, D, H, G, dh, 2);
  const int64_t l = 16, d = 8;
  // Mean-pooled compressed keys/values: differentiable, so x/wk/wv see the grads.
  const at::Tensor kc = heads(L.x, L.wk, G).unfold(1, l, d).mean(-1).contiguous();
  const at::Tensor vc = heads(L.x, L.wv, G).unfold(1, l, d).mean(-1).contiguous();
  const at::Tensor o = compressed_attention(heads(L.x, L.wq, H), kc, vc, l, d, 1.0 / std::sqrt(double(dh)));
  expect_all_grads(L, o);
}

TEST(AutogradCoverage, SelectedAttention) {
  NSA_REQUIRE_CUDA();
  const Leaves L = make_leaves(B, S, D, H, G, dh, 3);
  const at::Tensor q = heads(L.x, L.wq, H), k = heads(L.x, L.wk, G);
  const at::Tensor kc = k.detach().unfold(1, 16, 8).mean(-1).contiguous();
  const at::Tensor block_idx = select_blocks(q.detach(), kc, 16, 8, 16, 3, 1.0 / std::sqrt(double(dh)));
  EXPECT_FALSE(block_idx.requires_grad());
  const at::Tensor o = selected_attention(q, k, heads(L.x, L.wv, G), block_idx, 16, 1.0 / std::sqrt(double(dh)));
  expect_all_grads(L, o);
}

}  // namespace
}  // namespace nsa::cuda
