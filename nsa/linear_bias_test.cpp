// linear_bias against oracles it shares no code with: the forward against the
// sums written out in float64 loops, the backward against ATen's own autograd
// of matmul + add (float64, so both are exact to rounding).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "nsa/linear_bias.h"

namespace nsa {
namespace {

at::Tensor rnd(at::IntArrayRef shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble));
}

TEST(LinearBias, ForwardIsTheSumOfProductsPlusBias) {
  const at::Tensor x = rnd({2, 3, 5}, 1), w = rnd({5, 4}, 2), b = rnd({4}, 3);
  const at::Tensor y = linear_bias(x, w, b);
  ASSERT_EQ(y.sizes(), at::IntArrayRef({2, 3, 4}));
  const auto xa = x.accessor<double, 3>();
  const auto wa = w.accessor<double, 2>();
  const auto ba = b.accessor<double, 1>();
  const auto ya = y.accessor<double, 3>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int n = 0; n < 4; ++n) {
        double s = ba[n];
        for (int k = 0; k < 5; ++k) s += xa[i][j][k] * wa[k][n];
        EXPECT_NEAR(ya[i][j][n], s, 1e-12) << i << "," << j << "," << n;
      }
}

TEST(LinearBias, GradientsEqualThoseOfMatmulPlusBias) {
  const at::Tensor x0 = rnd({3, 7, 6}, 4), w0 = rnd({6, 5}, 5), b0 = rnd({5}, 6), dy = rnd({3, 7, 5}, 7);
  const auto grads = [&](bool ours) {
    const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true),
                     b = b0.clone().requires_grad_(true);
    const at::Tensor y = ours ? linear_bias(x, w, b) : at::matmul(x, w) + b;
    return torch::autograd::grad({y}, {x, w, b}, {dy});
  };
  const auto got = grads(true), want = grads(false);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(at::allclose(got[i], want[i], 1e-12, 1e-12)) << "input " << i;
}

TEST(LinearBias, OnlyInputsThatRequireGradGetOne) {
  const at::Tensor x = rnd({4, 3}, 8), w = rnd({3, 2}, 9).requires_grad_(true), b = rnd({2}, 10);
  linear_bias(x, w, b).sum().backward();
  EXPECT_TRUE(w.grad().defined());
  EXPECT_TRUE(at::allclose(w.grad(), x.sum(0).unsqueeze(1).expand({3, 2}), 1e-12, 1e-12));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

// E maps at once against each map written as matmul + add (float64 autograd):
// values and every gradient.
TEST(LinearBias, EachOfSeveralMapsIsItsOwnMatmulPlusBias) {
  const at::Tensor x0 = rnd({2, 7, 6}, 11), w0 = rnd({2, 6, 5}, 12), b0 = rnd({2, 5}, 13), dy = rnd({2, 7, 5}, 14);
  const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true),
                   b = b0.clone().requires_grad_(true);
  const at::Tensor y = linear_bias_each(x, w, b);
  const auto got = torch::autograd::grad({y}, {x, w, b}, {dy});
  for (int e = 0; e < 2; ++e) {
    SCOPED_TRACE("map " + std::to_string(e));
    const at::Tensor xe = x0[e].clone().requires_grad_(true), we = w0[e].clone().requires_grad_(true),
                     be = b0[e].clone().requires_grad_(true);
    const at::Tensor ye = at::matmul(xe, we) + be;
    const auto want = torch::autograd::grad({ye}, {xe, we, be}, {dy[e]});
    EXPECT_TRUE(at::allclose(y[e], ye, 1e-12, 1e-12)) << "values";
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(at::allclose(got[i][e], want[i], 1e-12, 1e-12)) << "gradient of input " << i;
  }
  EXPECT_THROW(linear_bias_each(x0, w0, rnd({2, 4}, 15)), c10::Error);
}

TEST(LinearBias, RejectsShapesThatDoNotCompose) {
  EXPECT_THROW(linear_bias(rnd({2, 3}, 1), rnd({4, 2}, 2), rnd({2}, 3)), c10::Error);
  EXPECT_THROW(linear_bias(rnd({2, 3}, 1), rnd({3, 2}, 2), rnd({3}, 3)), c10::Error);
}

// The parity runs are fp32 and fp64 (DESIGN.md: the sequential prefill against
// the decode step); only the 16-bit dtypes may reorder sums.
TEST(LinearBias, OnlySixteenBitRunsMayReorderSums) {
  EXPECT_TRUE(may_reorder_sums(at::kHalf));
  EXPECT_TRUE(may_reorder_sums(at::kBFloat16));
  EXPECT_FALSE(may_reorder_sums(at::kFloat));
  EXPECT_FALSE(may_reorder_sums(at::kDouble));
}

}  // namespace
}  // namespace nsa
