// The residual add + RMSNorm kernels (add_rms_norm.h) against float64 oracles
// written here from the definition: s = x + delta stored in x's dtype, h =
// s / sqrt(mean(s²) + eps) · w; gradients by ATen's autograd of that formula
// in float64 on the CPU (the rounding of s passed straight through, as autograd
// treats a cast), for each output receiving a gradient or not.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "nsa/cuda/add_rms_norm.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {
using testing::describe_case;
using testing::expect_close;
using testing::f64;
using testing::PoisonScope;
using testing::tolerance_for;

struct Case {
  std::vector<int64_t> sizes;  // [..., D]
  bool misaligned = false;     // x starts one element past a 16-byte boundary
};
// D = 768 (m7c), 96, 20 (no bf16 packs), 3, one row, rows not a multiple of a
// CTA's 4 warps, 2048 (paper_kernel), and a misaligned x.
const std::vector<Case> kCases = {{{2, 37, 96}}, {{5, 768}}, {{7, 20}}, {{3, 3}}, {{1, 64}}, {{2, 1, 2048}},
                                  {{9, 96}, true}};

std::string describe(const Case& c, at::ScalarType dt) {
  return describe_case(c.sizes, dt) + (c.misaligned ? " misaligned" : "");
}

constexpr double kEps = 1e-5;

struct Inputs {
  at::Tensor x, delta, w;   // CUDA; w float32 (float64 for float64), as the model keeps it
  at::Tensor ds_out, dh;    // upstream gradients, x's dtype
};
Inputs make_inputs(const Case& c, at::ScalarType dt, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  int64_t n = 1;
  for (int64_t s : c.sizes) n *= s;
  const auto on_gpu = [&](const at::Tensor& t, at::ScalarType to) { return t.to(at::kCUDA).to(to); };
  Inputs in;
  in.x = on_gpu(at::randn({n + 1}, gen) * 3, dt).narrow(0, c.misaligned ? 1 : 0, n).view(c.sizes);
  in.delta = on_gpu(at::randn(c.sizes, gen), dt);
  in.w = on_gpu(at::rand({c.sizes.back()}, gen) + 0.5, dt == at::kDouble ? at::kDouble : at::kFloat);
  in.ds_out = on_gpu(at::randn(c.sizes, gen), dt);
  in.dh = on_gpu(at::randn(c.sizes, gen), dt);
  return in;
}

// The definition in float64: s rounded to `dt` as the stream stores it, its
// gradient passed straight through the rounding.
std::pair<at::Tensor, at::Tensor> oracle(const at::Tensor& x, const at::Tensor& d, const at::Tensor& w,
                                         at::ScalarType dt) {
  const at::Tensor exact = x + d;
  const at::Tensor s = exact + (exact.to(dt).to(at::kDouble) - exact).detach();
  return {s, s / at::sqrt((s * s).mean(-1, true) + kEps) * w};
}

TEST(AddRmsNorm, ForwardMatchesTheDefinition) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble})
    for (const Case& c : kCases) {
      SCOPED_TRACE(describe(c, dt));
      const Inputs in = make_inputs(c, dt, 3);
      const auto [s, h] = add_rms_norm(in.x, in.delta, in.w, kEps);
      ASSERT_TRUE(s.defined() && h.defined()) << add_rms_norm_declines(in.x);
      EXPECT_EQ(s.scalar_type(), dt);
      EXPECT_EQ(h.scalar_type(), dt);
      const auto [s_ref, h_ref] = oracle(f64(in.x), f64(in.delta), f64(in.w), dt);
      expect_close("s", s, s_ref, tolerance_for(dt));
      expect_close("h", h, h_ref, tolerance_for(dt));
    }
}

TEST(AddRmsNorm, BackwardMatchesAutogradOfTheDefinition) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  // Which outputs receive a gradient: both (a block's stream), only h (the
  // final norm's stream has no other reader), only s.
  const std::vector<std::pair<bool, bool>> kUses = {{true, true}, {false, true}, {true, false}};
  for (at::ScalarType dt : {at::kBFloat16, at::kFloat, at::kDouble})
    for (const Case& c : kCases)
      for (auto [use_s, use_h] : kUses) {
        SCOPED_TRACE(describe(c, dt) + (use_s ? " ds_out" : "") + (use_h ? " dh" : ""));
        const Inputs in = make_inputs(c, dt, 5);
        const at::Tensor x = in.x.detach().clone().requires_grad_(true);
        const at::Tensor d = in.delta.detach().clone().requires_grad_(true);
        const at::Tensor w = in.w.detach().clone().requires_grad_(true);
        const auto [s, h] = add_rms_norm(x, d, w, kEps);
        ASSERT_TRUE(s.defined()) << add_rms_norm_declines(x);
        at::Tensor loss = at::zeros({}, s.options().dtype(at::kDouble));
        if (use_s) loss = loss + (s.to(at::kDouble) * in.ds_out.to(at::kDouble)).sum();
        if (use_h) loss = loss + (h.to(at::kDouble) * in.dh.to(at::kDouble)).sum();
        loss.backward();

        const at::Tensor x64 = f64(in.x).requires_grad_(true), d64 = f64(in.delta).requires_grad_(true);
        const at::Tensor w64 = f64(in.w).requires_grad_(true);
        const auto [s64, h64] = oracle(x64, d64, w64, dt);
        at::Tensor ref = at::zeros({}, at::kDouble);
        if (use_s) ref = ref + (s64 * f64(in.ds_out)).sum();
        if (use_h) ref = ref + (h64 * f64(in.dh)).sum();
        ref.backward();

        expect_close("dx", x.grad(), x64.grad(), tolerance_for(dt));
        expect_close("ddelta", d.grad(), d64.grad(), tolerance_for(dt));
        if (use_h) {
          EXPECT_EQ(w.grad().scalar_type(), in.w.scalar_type());
          // Products of the stored inputs summed in fp32: fp32's tolerance whatever x's dtype.
          expect_close("dw", w.grad(), w64.grad(), tolerance_for(in.w.scalar_type()));
        } else {
          EXPECT_TRUE(!w.grad().defined() || w.grad().abs().max().item<double>() == 0.0) << "dw without dh";
        }
      }
}

// The weight gradient sums over rows in a fixed order (per warp, warps in
// order, CTAs in order): two runs give the same bits.
TEST(AddRmsNorm, BackwardIsBitwiseReproducible) {
  NSA_REQUIRE_CUDA();
  const Inputs in = make_inputs({{8, 300, 768}}, at::kBFloat16, 9);
  std::vector<at::Tensor> dx, dw;
  for (int run = 0; run < 2; ++run) {
    const at::Tensor x = in.x.detach().clone().requires_grad_(true);
    const at::Tensor w = in.w.detach().clone().requires_grad_(true);
    const auto [s, h] = add_rms_norm(x, in.delta, w, kEps);
    torch::autograd::backward({s, h}, {in.ds_out, in.dh});
    dx.push_back(x.grad());
    dw.push_back(w.grad());
  }
  EXPECT_TRUE(at::equal(dx[0], dx[1]));
  EXPECT_TRUE(at::equal(dw[0], dw[1]));
}

}  // namespace
}  // namespace nsa::cuda
