// The SwiGLU kernels (swiglu.h) against float64 oracles written here: the
// forward from silu(g)·u = g/(1+e^-g)·u, the backward both from its derivative
// worked by hand and from ATen's autograd of at::silu(g)·u in float64 on the CPU
// (an implementation that shares nothing with the kernels). The model through
// it: fused_model_ops_test.cpp.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nsa/cuda/swiglu.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {
using testing::describe_case;
using testing::expect_close;
using testing::f64;
using testing::PoisonScope;
using testing::tolerance_for;

struct Case {
  std::vector<int64_t> out_sizes;  // [..., F]; gu is [..., 2F]
  bool misaligned = false;         // gu starts one element past a 16-byte boundary
};
// F = 64 (16-byte packs in every dtype), 72 (9 bf16 packs), 20 (packs only in
// fp32/fp64), 3 (single elements), one row, three dims, and a misaligned gu.
const std::vector<Case> kCases = {{{37, 64}}, {{5, 72}}, {{7, 20}}, {{3, 3}}, {{1, 8}}, {{2, 9, 48}},
                                  {{11, 64}, true}};

std::string describe(const Case& c, at::ScalarType dt) {
  return "out " + describe_case(c.out_sizes, dt) + (c.misaligned ? " misaligned" : "");
}

struct Inputs {
  at::Tensor gu, dout;  // CUDA, the case's dtype
};
Inputs make_inputs(const Case& c, at::ScalarType dt, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<int64_t> gu_sizes = c.out_sizes;
  gu_sizes.back() *= 2;
  int64_t n = 1;
  for (int64_t s : gu_sizes) n *= s;
  // Gate values over [-6, 6] in 2·randn: silu's curved part and both tails.
  const at::Tensor flat = (at::randn({n + 1}, gen) * 2).to(at::kCUDA).to(dt);
  Inputs in;
  in.gu = flat.narrow(0, c.misaligned ? 1 : 0, n).view(gu_sizes);
  in.dout = at::randn(c.out_sizes, gen).to(at::kCUDA).to(dt);
  return in;
}

// gu (float64) → (gate, up).
std::pair<at::Tensor, at::Tensor> halves(const at::Tensor& gu) {
  const int64_t F = gu.size(-1) / 2;
  return {gu.narrow(-1, 0, F), gu.narrow(-1, F, F)};
}

at::Tensor oracle_forward(const at::Tensor& gu) {
  auto [g, u] = halves(gu);
  return g / (1 + at::exp(-g)) * u;
}

// d/dg [g·σ(g)·u] = u·σ(g)·(1 + g·(1 − σ(g))), d/du = g·σ(g).
at::Tensor oracle_backward(const at::Tensor& gu, const at::Tensor& dout) {
  auto [g, u] = halves(gu);
  const at::Tensor s = 1 / (1 + at::exp(-g));
  return at::cat({dout * u * s * (1 + g * (1 - s)), dout * g * s}, -1);
}

TEST(Swiglu, ForwardMatchesTheDefinition) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble})
    for (const Case& c : kCases) {
      SCOPED_TRACE(describe(c, dt));
      const Inputs in = make_inputs(c, dt, 3);
      const at::Tensor got = swiglu(in.gu);
      EXPECT_EQ(got.scalar_type(), dt);
      EXPECT_EQ(got.sizes(), at::IntArrayRef(c.out_sizes));
      expect_close("out", got, oracle_forward(f64(in.gu)), tolerance_for(dt));
    }
}

TEST(Swiglu, BackwardMatchesTheDerivativeAndAtensAutograd) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kFloat, at::kDouble})
    for (const Case& c : kCases) {
      SCOPED_TRACE(describe(c, dt));
      const Inputs in = make_inputs(c, dt, 5);
      const at::Tensor leaf = in.gu.detach().clone().requires_grad_(true);
      swiglu(leaf).backward(in.dout);
      ASSERT_TRUE(leaf.grad().defined());
      EXPECT_EQ(leaf.grad().scalar_type(), dt);
      const at::Tensor gu64 = f64(in.gu), d64 = f64(in.dout);
      expect_close("d gu vs the derivative", leaf.grad(), oracle_backward(gu64, d64), tolerance_for(dt));
      const at::Tensor ref = gu64.clone().requires_grad_(true);
      auto [g, u] = halves(ref);
      (at::silu(g) * u).backward(d64);
      expect_close("d gu vs ATen autograd", leaf.grad(), ref.grad(), tolerance_for(dt));
    }
}

// Gates far into both tails: exp(-g) overflows for g < -88 in fp32; the kernel
// must give silu's limits (0 and g·u) and finite gradients, never NaN.
TEST(Swiglu, TailsGiveTheLimitsNotNaN) {
  NSA_REQUIRE_CUDA();
  const auto o = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  const at::Tensor g = at::tensor({-1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0}, o).view({1, 7});
  const at::Tensor gu = at::cat({g, at::full({1, 7}, 2.0, o)}, -1).requires_grad_(true);
  const at::Tensor y = swiglu(gu);
  y.backward(at::ones_like(y));
  EXPECT_TRUE(at::isfinite(y).all().item<bool>()) << y;
  EXPECT_TRUE(at::isfinite(gu.grad()).all().item<bool>()) << gu.grad();
  const at::Tensor ref = oracle_forward(f64(gu));
  EXPECT_TRUE(at::allclose(f64(y), ref, 1e-6, 1e-30)) << y << "\n" << ref;
  EXPECT_TRUE(at::allclose(f64(gu.grad()), oracle_backward(f64(gu), at::ones({1, 7}, at::kDouble)), 1e-6, 1e-30))
      << gu.grad();
}

}  // namespace
}  // namespace nsa::cuda
