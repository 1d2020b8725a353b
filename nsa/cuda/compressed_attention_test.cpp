// compressed_attention vs ref_compressed_attention (float64): output and every
// gradient, including queries that see no compressed block (o = 0, no NaN).
#include <cmath>

#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

using testing::compressed_len;

// The branch under test and its float64 reference, as check_branch takes them.
testing::AttnFn kernel(int64_t l, int64_t d, double scale) {
  return [=](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return compressed_attention(q, k, v, l, d, scale);
  };
}
testing::AttnFn reference(int64_t l, int64_t d, double scale) {
  return [=](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return ref_compressed_attention(q, k, v, l, d, scale);
  };
}

struct CompressedCase {
  const char* name;
  int64_t B, S, H, G, dk, dv, l, d;
  at::ScalarType dtype;
};
void PrintTo(const CompressedCase& c, std::ostream* os) { *os << c.name; }


class CompressedAttention : public ::testing::TestWithParam<CompressedCase> {};

TEST_P(CompressedAttention, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const CompressedCase& c = GetParam();
  const int64_t S_cmp = compressed_len(c.S, c.l, c.d);
  const auto in = testing::make_inputs(c.B, c.S, S_cmp, c.H, c.G, c.dk, c.dv, c.dtype, 3000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  testing::check_branch(c.name, in, kernel(c.l, c.d, scale), reference(c.l, c.d, scale));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CompressedAttention,
    ::testing::Values(
        CompressedCase{"bf16_S107_l32_d16", 1, 107, 4, 2, 64, 64, 32, 16, at::kBFloat16},
        CompressedCase{"fp16_B2_S130_l8_d4", 2, 130, 8, 2, 128, 128, 8, 4, at::kHalf},
        CompressedCase{"fp32_S300_l8_d4_many_blocks", 1, 300, 4, 2, 32, 16, 8, 4, at::kFloat},
        CompressedCase{"fp32_S_less_than_l_no_blocks", 1, 20, 4, 2, 16, 16, 32, 16, at::kFloat},
        CompressedCase{"bf16_paper_heads_d192_dv128", 1, 160, 16, 4, 192, 128, 32, 16, at::kBFloat16},
        CompressedCase{"bf16_d256", 1, 90, 2, 1, 256, 256, 16, 8, at::kBFloat16},
        CompressedCase{"fp32_h6_m7c_like", 2, 128, 12, 2, 64, 64, 32, 16, at::kFloat},
        // Tensor-core (v2) tile boundaries: S around the 64-row / 64-key tiles (S = 1:
        // no compressed key at all), h = 1, 6, 16, 80 (head chunks of 64), dk != dv.
        CompressedCase{"bf16_S1_h1_d64_no_blocks", 1, 1, 1, 1, 64, 64, 32, 16, at::kBFloat16},
        CompressedCase{"fp16_S63_h6_d64_l8_d4", 1, 63, 12, 2, 64, 64, 8, 4, at::kHalf},
        CompressedCase{"bf16_S64_h16_d192_dv128_l16_d8", 1, 64, 16, 1, 192, 128, 16, 8, at::kBFloat16},
        CompressedCase{"bf16_S65_h1_d128_l4_d2", 1, 65, 2, 2, 128, 128, 4, 2, at::kBFloat16},
        CompressedCase{"fp16_S129_h6_d64_dv192_l8_d4", 1, 129, 6, 1, 64, 192, 8, 4, at::kHalf},
        CompressedCase{"bf16_B2_S257_h16_d192_dv128_l32_d16", 2, 257, 32, 2, 192, 128, 32, 16, at::kBFloat16},
        CompressedCase{"bf16_S257_h1_d128_dv64_l2_d1_many_tiles", 1, 257, 3, 3, 128, 64, 2, 1, at::kBFloat16},
        CompressedCase{"bf16_S130_h80_head_chunks_d64", 1, 130, 80, 1, 64, 64, 8, 4, at::kBFloat16}),
    [](const ::testing::TestParamInfo<CompressedCase>& info) { return std::string(info.param.name); });

TEST(CompressedAttention, EarlyQueriesGetZerosNotNaN) {
  NSA_REQUIRE_CUDA();
  const int64_t S = 40, l = 16, d = 8;
  const auto in = testing::make_inputs(1, S, compressed_len(S, l, d), 4, 2, 32, 32, at::kBFloat16, 5);
  const at::Tensor o = compressed_attention(in.q, in.k, in.v, l, d, 0.2);
  EXPECT_TRUE(at::isfinite(o).all().item<bool>());
  EXPECT_EQ(o.narrow(1, 0, l - 1).abs().max().item<float>(), 0.f) << "queries t < l-1 see no block";
  EXPECT_GT(o.narrow(1, l - 1, S - l + 1).abs().max().item<float>(), 0.f);
}

// The same inputs through v1 (forced) and v2 (forward, backward dq and dk/dv): both
// match the reference, and their logsumexps agree (+inf in the same rows: early queries see no block).
TEST(CompressedAttention, V1AndV2BothMatchReference) {
  NSA_REQUIRE_CUDA();
  struct Case {
    const char* name;
    int64_t B, S, H, G, dk, dv, l, d;
    at::ScalarType dtype;
  };
  for (const Case& c : {Case{"bf16_m7c_like_S300_h6_d64_l32_d16", 1, 300, 12, 2, 64, 64, 32, 16, at::kBFloat16},
                        Case{"fp16_paper_like_S200_h16_d192_dv128_l8_d4", 2, 200, 32, 2, 192, 128, 8, 4, at::kHalf}}) {
    const int64_t S_cmp = compressed_len(c.S, c.l, c.d);
    const auto in = testing::make_inputs(c.B, c.S, S_cmp, c.H, c.G, c.dk, c.dv, c.dtype, 6000 + c.S);
    const double scale = 1.0 / std::sqrt(double(c.dk));
    BranchSpec spec;
    spec.branch = Branch::Compressed, spec.cmp_block = c.l, spec.cmp_stride = c.d, spec.scale = scale;
    const at::Tensor ref = ref_compressed_attention(in.q.cpu().to(at::kDouble), in.k.cpu().to(at::kDouble),
                                                    in.v.cpu().to(at::kDouble), c.l, c.d, scale);
    testing::check_v1_and_v2(c.name, in, spec, ref);
    testing::check_branch_v1_and_v2(c.name, in, kernel(c.l, c.d, scale), reference(c.l, c.d, scale));
  }
}

// BackwardDq::atomic (testing::check_dq_in_dkdv): the m7c stride and block over
// two key tiles (the rows split over many CTAs), batch 2 with fp16, dk != dv,
// and 128/128 (no room for dS^T: the dq kernel runs); on mma.sync and, where
// the device runs them, on warpgroup MMAs (each case checks which ran).
TEST(CompressedAttention, AtomicDqMatchesReference) {
  NSA_REQUIRE_CUDA();
  testing::ForceV1Scope force(false);
  std::vector<SelectedMma> mmas{SelectedMma::MmaSync};
  if (wgmma_declines().empty()) mmas.push_back(SelectedMma::Wgmma);
  struct Case {
    const char* name;
    int64_t B, S, H, G, dk, dv, l, d;
    at::ScalarType dtype;
    bool applies;
  };
  for (const Case& c : {Case{"bf16_S2048_h6_d64_l32_d16_two_key_tiles", 1, 2048, 12, 2, 64, 64, 32, 16, at::kBFloat16, true},
                        Case{"fp16_B2_S300_h4_d64_l8_d4", 2, 300, 8, 2, 64, 64, 8, 4, at::kHalf, true},
                        Case{"bf16_S200_h16_d192_dv128_l16_d8", 1, 200, 16, 1, 192, 128, 16, 8, at::kBFloat16, true},
                        Case{"fp16_S300_h2_d128_l8_d4_no_room", 1, 300, 4, 2, 128, 128, 8, 4, at::kHalf, false}})
  for (const SelectedMma mma : mmas) {
    SCOPED_TRACE(std::string(c.name) + (mma == SelectedMma::Wgmma ? " (wgmma)" : " (mma.sync)"));
    testing::SettingScope<SelectedMma> scope(compressed_dkdv_mma, set_compressed_dkdv_mma, mma);
    const auto in = testing::make_inputs(c.B, c.S, compressed_len(c.S, c.l, c.d), c.H, c.G, c.dk, c.dv, c.dtype,
                                         8000 + c.S);
    const double scale = 1.0 / std::sqrt(double(c.dk));
    BranchSpec spec;
    spec.branch = Branch::Compressed, spec.cmp_block = c.l, spec.cmp_stride = c.d, spec.scale = scale;
    testing::check_dq_in_dkdv(
        c.name, in, spec,
        [=](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
          return compressed_attention_with_lse(q, k, v, c.l, c.d, scale, BackwardDq::atomic).first;
        },
        reference(c.l, c.d, scale), c.applies);
    EXPECT_EQ(last_compressed_dkdv_wgmma(), mma == SelectedMma::Wgmma && c.applies);
  }
}

}  // namespace
}  // namespace nsa::cuda
