// The compressed branch through cuDNN (compressed_cudnn.h): the fold of the
// staircase mask into causal runs, checked against the mask's definition on
// the CPU; then output, logsumexp and every gradient against float64 (the
// reference shares no code with the fold), with each backward the layer can
// name.
#include <cmath>
#include <limits>

#include <torch/csrc/autograd/autograd.h>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/compressed_cudnn.h"
#include "nsa/cuda/test_util.h"
#include "nsa/flags.h"

namespace nsa::cuda {
namespace {

using testing::compressed_len;

// For every residue r the runs cover it once, and for every query t = d u + r
// the run's rule (keys i <= u - u0) sees exactly the keys of the definition
// (i d + l - 1 <= t), counted by brute force. Runs without a device.
TEST(CudnnCompressed, FoldedRunsSeeTheKeysOfTheStaircase) {
  for (int64_t l : {1, 2, 4, 8, 16, 31, 32, 33, 64})
    for (int64_t d : {1, 2, 3, 4, 8, 16, 32}) {
      SCOPED_TRACE("l " + std::to_string(l) + ", d " + std::to_string(d));
      const std::vector<ResidueRun> runs = residue_runs(l, d);
      ASSERT_FALSE(runs.empty());
      EXPECT_LE(runs.size(), 2u) << "at most two values of c_r";
      EXPECT_EQ(runs.front().r_lo, 0);
      EXPECT_EQ(runs.back().r_hi, d);
      for (size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i].r_lo, runs[i - 1].r_hi);
      for (int64_t t = 0; t < 8 * d + 3 * l; ++t) {
        const int64_t u = t / d, r = t % d;
        int64_t seen = 0;
        for (int64_t i = 0; i * d + l - 1 <= t; ++i) ++seen;  // the definition
        for (const ResidueRun& run : runs)
          if (run.r_lo <= r && r < run.r_hi) EXPECT_EQ(std::max<int64_t>(0, u - run.u0 + 1), seen) << "t " << t;
      }
    }
}

struct Case {
  const char* name;
  int64_t B, S, H, G, dk, dv, l, d;
  at::ScalarType dtype;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr std::pair<CudnnBackward, const char*> kBackwards[] = {
    {CudnnBackward::ours, "our backward"},
    {CudnnBackward::cudnn_deterministic, "cuDNN deterministic backward"},
    {CudnnBackward::cudnn_atomic, "cuDNN backward"}};

// The logsumexp of each (b, t, h) over the keys it sees, in float64 from the
// definition (+inf where it sees none, as ForwardResult::lse).
at::Tensor reference_lse(const at::Tensor& q, const at::Tensor& kc, int64_t l, int64_t d, double scale) {
  const at::Tensor q64 = q.cpu().to(at::kDouble), k64 = kc.cpu().to(at::kDouble);
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = kc.size(2), Sk = kc.size(1);
  at::Tensor out = at::empty({B, S, H}, at::kDouble);
  auto o = out.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const at::Tensor s = at::matmul(q64[b].select(1, h), k64[b].select(1, h / (H / G)).t()) * scale;  // [S, Sk]
      auto sa = s.accessor<double, 2>();
      for (int64_t t = 0; t < S; ++t) {
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t i = 0; i < Sk && i * d + l - 1 <= t; ++i) m = std::max(m, sa[t][i]);
        for (int64_t i = 0; i < Sk && i * d + l - 1 <= t; ++i) sum += std::exp(sa[t][i] - m);
        o[b][t][h] = sum > 0 ? m + std::log(sum) : std::numeric_limits<double>::infinity();
      }
    }
  return out;
}

class CudnnCompressed : public ::testing::TestWithParam<Case> {};

TEST_P(CudnnCompressed, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const Case& c = GetParam();
  const auto in = testing::make_inputs(c.B, c.S, compressed_len(c.S, c.l, c.d), c.H, c.G, c.dk, c.dv, c.dtype,
                                       9100 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  for (const auto& [backward, label] : kBackwards) {
    const std::string why = cudnn_compressed_declines(in.q, in.k, in.v, c.l, c.d, backward);
    ASSERT_EQ(why, "") << c.name << ", " << label;
    testing::check_branch(
        std::string(c.name) + " (cuDNN forward, " + label + ")", in,
        [&, backward = backward](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
          return cudnn_compressed_attention_with_lse(q, k, v, c.l, c.d, scale, backward).first;
        },
        [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
          return ref_compressed_attention(q, k, v, c.l, c.d, scale);
        });
  }
  // The logsumexp select_blocks reads: finite and close where a key is seen,
  // +inf in the same rows as the definition's.
  const testing::PoisonScope poison;  // every element written: none left NaN
  const ForwardResult f = cudnn_compressed_forward(in.q, in.k, in.v, c.l, c.d, scale);
  EXPECT_FALSE(at::isnan(f.o).any().item<bool>()) << c.name << ": an output element no call wrote";
  EXPECT_FALSE(at::isnan(f.lse).any().item<bool>()) << c.name << ": a logsumexp no call wrote";
  const at::Tensor ref = reference_lse(in.q, in.k, c.l, c.d, scale), got = f.lse.cpu().to(at::kDouble);
  EXPECT_TRUE(at::equal(at::isinf(got), at::isinf(ref))) << c.name << ": rows without keys differ";
  const at::Tensor seen = at::isfinite(ref);
  EXPECT_LT((got.masked_select(seen) - ref.masked_select(seen)).abs().max().item<double>(), 2e-3) << c.name;
  if (c.l > 1)
    EXPECT_EQ(f.o.narrow(1, 0, std::min(c.S, c.l - 1)).abs().max().item<float>(), 0.f) << "queries t < l-1 see no key";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudnnCompressed,
    ::testing::Values(
        // m7c's heads and compression (l 32, d 16: two runs, 15 residues and 1).
        Case{"bf16_S512_h6_d64_l32_d16", 1, 512, 12, 2, 64, 64, 32, 16, at::kBFloat16},
        Case{"fp16_B2_S256_h6_d64_l32_d16", 2, 256, 12, 2, 64, 64, 32, 16, at::kHalf},
        // l a multiple of d again with other sizes; odd head counts (the
        // logsumexp's run offsets not 16-byte aligned).
        Case{"bf16_S200_h3_d128_l8_d4", 1, 200, 3, 1, 128, 128, 8, 4, at::kBFloat16},
        // l not a multiple of d (the runs split elsewhere), one run (l = 1).
        Case{"bf16_S240_h4_d64_l10_d4", 1, 240, 8, 2, 64, 64, 10, 4, at::kBFloat16},
        Case{"fp16_S96_h2_d64_l1_d2", 1, 96, 2, 1, 64, 64, 1, 2, at::kHalf},
        // The paper's heads: 16 a group, dk 192, dv 128.
        Case{"bf16_B2_S256_h16_d192_dv128_l32_d16", 2, 256, 32, 2, 192, 128, 32, 16, at::kBFloat16},
        // Few rows: the runs' first rows and the last keys.
        Case{"bf16_S64_h6_d64_l32_d16_few_rows", 1, 64, 6, 1, 64, 64, 32, 16, at::kBFloat16}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// What the route refuses, before cuDNN is asked.
TEST(CudnnCompressed, DeclinesWhatTheFoldCannotHold) {
  NSA_REQUIRE_CUDA();
  const auto mk = [](int64_t S, int64_t heads, int64_t d, at::ScalarType dt) {
    return at::randn({1, S, heads, d}, at::TensorOptions().device(at::kCUDA).dtype(dt));
  };
  const auto q = mk(100, 4, 64, at::kBFloat16), k = mk(6, 2, 64, at::kBFloat16);
  EXPECT_EQ(cudnn_compressed_declines(q, k, k, 32, 16), "sequence length is not a multiple of the compression stride");
  EXPECT_EQ(cudnn_compressed_declines(mk(96, 4, 64, at::kFloat), mk(6, 2, 64, at::kFloat), mk(6, 2, 64, at::kFloat),
                                      32, 16),
            "dtype is neither fp16 nor bf16");
  EXPECT_EQ(cudnn_compressed_declines(mk(96, 4, 64, at::kBFloat16), mk(0, 2, 64, at::kBFloat16),
                                      mk(0, 2, 64, at::kBFloat16), 32, 16),
            "empty batch, sequence or compressed keys");
  EXPECT_EQ(cudnn_compressed_declines(mk(96, 4, 64, at::kBFloat16), mk(6, 3, 64, at::kBFloat16),
                                      mk(6, 3, 64, at::kBFloat16), 32, 16),
            "query heads are not a multiple of the KV groups");
  EXPECT_EQ(cudnn_compressed_declines(mk(96, 4, 64, at::kBFloat16), mk(6, 2, 64, at::kBFloat16).cpu(),
                                      mk(6, 2, 64, at::kBFloat16), 32, 16),
            "not CUDA tensors");
}

// Two backward passes give the same bits with our backward and with cuDNN's
// deterministic one (the copies' gradients are summed in a fixed order).
TEST(CudnnCompressed, BackwardIsReproducible) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(1, 1024, compressed_len(1024, 32, 16), 12, 2, 64, 64, at::kBFloat16, 77);
  for (const auto& [backward, label] : kBackwards) {
    if (backward == CudnnBackward::cudnn_atomic) continue;
    ASSERT_EQ(cudnn_compressed_declines(in.q, in.k, in.v, 32, 16, backward), "") << label;
    std::vector<at::Tensor> first;
    for (int run = 0; run < 2; ++run) {
      const at::Tensor q = in.q.detach().requires_grad_(true), k = in.k.detach().requires_grad_(true),
                       v = in.v.detach().requires_grad_(true);
      const at::Tensor o = cudnn_compressed_attention_with_lse(q, k, v, 32, 16, 0.125, backward).first;
      const auto g = torch::autograd::grad({o}, {q, k, v}, {in.dout});
      if (run == 0) first = g;
      else
        for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(g[i], first[i])) << label << ", gradient " << i;
    }
  }
}

// NSA_COMPRESSED_BWD's choices (nsa/flags.cpp) are `auto` and the backwards
// the flag's doc names; `auto` resolves to cuDNN's deterministic backward
// (reproducible) or cuDNN's with atomics (fast); any other text is refused
// naming the flag. NSA_COMPRESSED_CUDNN takes auto, 1 and 0. Runs without a
// device.
TEST(CudnnCompressed, FlagValuesNameTheChoices) {
  testing::expect_cudnn_backward_flag("NSA_COMPRESSED_BWD", CudnnBackward::cudnn_deterministic,
                                      CudnnBackward::cudnn_atomic);
  const FlagInfo* route = find_flag("NSA_COMPRESSED_CUDNN");
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->default_value, "auto");
  EXPECT_EQ(route->allowed, (std::vector<std::string_view>{"auto", "1", "0"}));
}

// The size rule under NSA_COMPRESSED_CUDNN=auto at the shapes it was measured
// on (compressed_cudnn.h): the m7c training shapes and m7c at 8k stay on our
// kernels, paper_kernel at 8k and m7c at 64k go to cuDNN. Shapes only: meta
// tensors, no device.
TEST(CudnnCompressed, PaysFromTheMeasuredCut) {
  const auto mk = [](int64_t B, int64_t S, int64_t heads, int64_t d) {
    return at::empty({B, S, heads, d}, at::TensorOptions().device(at::kMeta).dtype(at::kBFloat16));
  };
  const auto pays = [&](int64_t B, int64_t S, int64_t H, int64_t G, int64_t dk, int64_t dv) {
    const int64_t Sk = (S - 32) / 16 + 1;
    return cudnn_compressed_pays(mk(B, S, H, dk), mk(B, Sk, G, dk), mk(B, Sk, G, dv));
  };
  EXPECT_FALSE(pays(4, 2048, 12, 2, 64, 64));    // production_125m
  EXPECT_FALSE(pays(8, 2048, 12, 2, 64, 64));    // the m7c training step
  EXPECT_FALSE(pays(1, 8192, 12, 2, 64, 64));    // m7c at 8k: even
  EXPECT_TRUE(pays(1, 16384, 12, 2, 64, 64));    // scenarios/long_context.yaml
  EXPECT_TRUE(pays(1, 8192, 64, 4, 192, 128));   // paper_kernel at 8k
  EXPECT_TRUE(pays(1, 65536, 12, 2, 64, 64));    // m7c at 64k
}

}  // namespace
}  // namespace nsa::cuda
