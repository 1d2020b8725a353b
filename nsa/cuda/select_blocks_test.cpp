// select_blocks vs ref_select_blocks: exact equality (ties included), plus the
// invariants every selection must satisfy whatever the scores.
#include <cmath>
#include <vector>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
// select_blocks.cu testing hook: version (1 or 2) of the last select_blocks kernel.
int last_select_blocks_kernel_version();
namespace {

struct SelectCase {
  const char* name;
  int64_t B, S, H, G, dk, l, d, lp, n;
  at::ScalarType dtype;
  bool tied;  // every compressed key identical: all visible p equal, many exact ties
};
void PrintTo(const SelectCase& c, std::ostream* os) { *os << c.name; }

struct SelectInputs {
  at::Tensor q, kc;
};
SelectInputs make_select_inputs(const SelectCase& c, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t S_cmp = testing::compressed_len(c.S, c.l, c.d);
  SelectInputs in;
  in.q = at::randn({c.B, c.S, c.H, c.dk}, gen).to(c.dtype);
  in.kc = c.tied ? at::randn({c.B, 1, c.G, c.dk}, gen).expand({c.B, S_cmp, c.G, c.dk}).contiguous().to(c.dtype)
                 : at::randn({c.B, S_cmp, c.G, c.dk}, gen).to(c.dtype);
  return in;
}

// Invariants from DESIGN.md §2, checked on the kernel's output alone.
void expect_valid_selection(const at::Tensor& sel_in, int64_t lp, int64_t n) {
  const at::Tensor sel = sel_in.cpu();
  const auto a = sel.accessor<int, 4>();
  for (int64_t b = 0; b < sel.size(0); ++b)
    for (int64_t t = 0; t < sel.size(1); ++t)
      for (int64_t g = 0; g < sel.size(2); ++g) {
        SCOPED_TRACE(::testing::Message() << "b=" << b << " t=" << t << " g=" << g);
        const int64_t n_cand = t / lp + 1, want = std::min(n, n_cand);
        int64_t count = 0, prev = -1;
        bool has0 = false, has_local = false, has_prev = (t / lp - 1 < 0);
        for (int64_t s = 0; s < n; ++s) {
          const int j = a[b][t][g][s];
          if (s < want) {
            ASSERT_GE(j, 0) << "slot " << s << " unused with candidates left";
            ASSERT_GT(j, prev) << "not sorted ascending / duplicate";
            ASSERT_LE(j * lp, t) << "block in the future";
            prev = j, ++count;
            has0 |= j == 0, has_local |= j == t / lp, has_prev |= j == t / lp - 1;
          } else {
            ASSERT_EQ(j, -1) << "slot " << s << " past the candidates must be -1";
          }
        }
        if (n >= 3) EXPECT_TRUE(has0 && has_local && has_prev) << "a forced block is missing";
      }
}

class SelectBlocks : public ::testing::TestWithParam<SelectCase> {};

at::Tensor run_select(const SelectCase& c, const SelectInputs& in, double scale) {
  set_poison_outputs(true);
  const at::Tensor got =
      select_blocks(in.q.to(at::kCUDA), in.kc.to(at::kCUDA), c.l, c.d, c.lp, c.n, scale).cpu();
  set_poison_outputs(false);
  return got;
}

// `got` vs ref_select_blocks: exact on tied inputs, exact up to rare near-ties otherwise.
void expect_matches_reference(const SelectCase& c, const SelectInputs& in, double scale, const at::Tensor& got) {
  const at::Tensor q64 = in.q.to(at::kDouble), kc64 = in.kc.to(at::kDouble);
  const at::Tensor want = ref_select_blocks(q64, kc64, c.l, c.d, c.lp, c.n, scale);
  expect_valid_selection(got, c.lp, c.n);
  if (c.tied) {
    EXPECT_TRUE(at::equal(got, want)) << "tied scores must resolve to lower indices exactly";
    return;
  }
  // Random scores: exact, except where the two precisions straddle a near-tie
  // (reference scores of the swapped blocks within 1e-4); those must be rare.
  const at::Tensor score = ref_selection_scores(q64, kc64, c.l, c.d, c.lp, scale);
  const int64_t rows = got.size(0) * got.size(1) * got.size(2);
  const at::Tensor g2 = got.reshape({rows, c.n}), w2 = want.reshape({rows, c.n});
  const at::Tensor s2 = score.reshape({rows, score.size(3)});
  int64_t excused = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (at::equal(g2[r], w2[r])) continue;
    const at::Tensor mine = g2[r].to(at::kLong), theirs = w2[r].to(at::kLong);
    const at::Tensor only_mine = mine.masked_select(at::isin(mine, theirs).logical_not());
    const at::Tensor only_theirs = theirs.masked_select(at::isin(theirs, mine).logical_not());
    ASSERT_EQ(only_mine.numel(), only_theirs.numel());
    const double gap = (s2[r].index_select(0, only_mine).min() - s2[r].index_select(0, only_theirs).max())
                           .abs().item<double>();
    EXPECT_LE(gap, 1e-4) << "row " << r << ": kernel " << g2[r] << " vs reference " << w2[r]
                         << " differ by a score gap of " << gap << " (not a near-tie)";
    ++excused;
  }
  EXPECT_LE(excused, rows / 100 + 1) << excused << " near-tie rows of " << rows;
}

TEST_P(SelectBlocks, MatchesReferenceExactly) {
  NSA_REQUIRE_CUDA();
  const SelectCase& c = GetParam();
  const SelectInputs in = make_select_inputs(c, 4000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  expect_matches_reference(c, in, scale, run_select(c, in, scale));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectBlocks,
    ::testing::Values(
        SelectCase{"fp32_paper_hparams_S1000", 1, 1000, 4, 2, 64, 32, 16, 64, 16, at::kFloat, false},
        SelectCase{"fp32_tiny_B2_S107", 2, 107, 4, 2, 16, 8, 4, 16, 4, at::kFloat, false},
        SelectCase{"bf16_S130_l8_d4_lp16", 1, 130, 8, 2, 32, 8, 4, 16, 5, at::kBFloat16, false},
        SelectCase{"bf16_paper_heads_d192", 1, 256, 16, 1, 192, 32, 16, 64, 3, at::kBFloat16, false},
        SelectCase{"fp32_ties_S300", 1, 300, 4, 2, 32, 8, 4, 16, 6, at::kFloat, true},
        SelectCase{"bf16_ties_paper_S700", 2, 700, 4, 2, 64, 32, 16, 64, 8, at::kBFloat16, true},
        SelectCase{"fp32_S_less_than_l", 1, 20, 2, 1, 16, 32, 16, 8, 4, at::kFloat, false},
        SelectCase{"fp32_fewer_blocks_than_n", 1, 100, 2, 1, 16, 8, 4, 16, 16, at::kFloat, false},
        SelectCase{"fp32_n_is_1_block0_only", 1, 64, 2, 1, 16, 8, 4, 16, 1, at::kFloat, false}),
    [](const ::testing::TestParamInfo<SelectCase>& info) { return std::string(info.param.name); });

// Shapes the tensor-core v2 kernel (select_blocks_tc.cu) takes: fp16/bf16, dk in
// {64, 128, 192}, h = H/G in {1, 4, 5, 6, 8, 9, 16, 20, 32, 64}: both ways of
// the finishing (half sums where h rounded up to 8 pads at most a quarter of
// the rows: 6, 8, 16, 20, 32, 64, a query over one half, two, three, four or
// eight; per head otherwise: 1, 4, 5, 9); S around the 32/64-query and
// 64-key tile edges, queries with no compressed key (S < l), fewer blocks than n,
// several key tiles (S = 1000 / 3000 with l = 8, d = 4: 249 / 749 keys).
const std::vector<SelectCase>& v2_cases() {
  static const std::vector<SelectCase> cases = {
      SelectCase{"v2_bf16_S1_h6", 1, 1, 12, 2, 64, 32, 16, 64, 16, at::kBFloat16, false},
      SelectCase{"v2_fp16_S31_h6_B2", 2, 31, 12, 2, 64, 32, 16, 64, 16, at::kHalf, false},
      SelectCase{"v2_bf16_S32_h1", 1, 32, 2, 2, 64, 32, 16, 64, 4, at::kBFloat16, false},
      SelectCase{"v2_fp16_S33_h16_d128", 1, 33, 16, 1, 128, 8, 4, 16, 3, at::kHalf, false},
      SelectCase{"v2_bf16_S64_h20_d192", 1, 64, 20, 1, 192, 8, 4, 16, 4, at::kBFloat16, false},
      SelectCase{"v2_bf16_S65_h6_d128_B2", 2, 65, 12, 2, 128, 8, 4, 16, 5, at::kBFloat16, false},
      SelectCase{"v2_fp16_S257_h1_B2", 2, 257, 2, 2, 64, 8, 4, 16, 6, at::kHalf, false},
      SelectCase{"v2_bf16_ties_S257_h20", 1, 257, 20, 1, 64, 8, 4, 16, 6, at::kBFloat16, true},
      SelectCase{"v2_bf16_fewer_blocks_than_n", 1, 100, 12, 2, 64, 8, 4, 16, 16, at::kBFloat16, false},
      SelectCase{"v2_bf16_S1000_h6_paper_B2", 2, 1000, 12, 2, 64, 32, 16, 64, 16, at::kBFloat16, false},
      SelectCase{"v2_fp16_S1000_h16_d192", 1, 1000, 16, 1, 192, 32, 16, 64, 16, at::kHalf, false},
      SelectCase{"v2_fp16_S1000_h1_d128_l8", 1, 1000, 2, 2, 128, 8, 4, 16, 16, at::kHalf, false},
      SelectCase{"v2_bf16_ties_S1000_h6_l8", 1, 1000, 12, 2, 64, 8, 4, 16, 8, at::kBFloat16, true},
      SelectCase{"v2_fp16_ties_S1000_h16_d128", 1, 1000, 32, 2, 128, 32, 16, 64, 16, at::kHalf, true},
      SelectCase{"v2_bf16_ties_S513_h20_d192", 1, 513, 20, 1, 192, 8, 4, 16, 6, at::kBFloat16, true},
      SelectCase{"v2_bf16_S3000_h6_l8", 1, 3000, 12, 2, 64, 8, 4, 16, 16, at::kBFloat16, false},
      SelectCase{"v2_bf16_S1000_h8_paper", 1, 1000, 16, 2, 64, 32, 16, 64, 16, at::kBFloat16, false},
      SelectCase{"v2_fp16_S700_h32_d128_l8", 1, 700, 32, 1, 128, 8, 4, 16, 8, at::kHalf, false},
      SelectCase{"v2_bf16_S300_h64_B2", 2, 300, 128, 2, 64, 8, 4, 16, 6, at::kBFloat16, false},
      SelectCase{"v2_bf16_ties_S300_h64", 1, 300, 64, 1, 64, 8, 4, 16, 6, at::kBFloat16, true},
      SelectCase{"v2_bf16_S1000_h5_paper", 1, 1000, 10, 2, 64, 32, 16, 64, 16, at::kBFloat16, false},
      SelectCase{"v2_fp16_ties_S700_h9_d128", 1, 700, 9, 1, 128, 8, 4, 16, 8, at::kHalf, true},
      SelectCase{"v2_bf16_S3000_h4_l8_B2", 2, 3000, 8, 2, 64, 8, 4, 16, 16, at::kBFloat16, false},
      // 8-warp CTAs (half sums at dk >= 128) over several key tiles with each
      // warp finishing its own queries: one query a warp (h 16, 8 tiles), two
      // (h 8 at dk 192, 6 tiles, B 2).
      SelectCase{"v2_bf16_S2000_h16_d128_l8", 1, 2000, 16, 1, 128, 8, 4, 16, 16, at::kBFloat16, false},
      SelectCase{"v2_fp16_S1500_h8_d192_l8_B2", 2, 1500, 16, 2, 192, 8, 4, 16, 8, at::kHalf, false},
      // Over 32 candidates (up to 188): the top-n's threshold shortcut, on
      // ties (v1, which runs the rounds, must agree bitwise), at n = 32 (its
      // largest) and n = 40 (the rounds again).
      SelectCase{"v2_bf16_ties_S3000_h6_l8", 1, 3000, 12, 2, 64, 8, 4, 16, 16, at::kBFloat16, true},
      SelectCase{"v2_fp16_S3000_h1_l8_n32", 1, 3000, 2, 2, 64, 8, 4, 16, 32, at::kHalf, false},
      SelectCase{"v2_bf16_S3000_h6_l8_n40", 1, 3000, 12, 2, 64, 8, 4, 16, 40, at::kBFloat16, false},
  };
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    V2Cases, SelectBlocks, ::testing::ValuesIn(v2_cases()),
    [](const ::testing::TestParamInfo<SelectCase>& info) { return std::string(info.param.name); });

// v2 fed the compressed forward's logsumexp of the same scores (as the layer
// feeds it; the kernel then skips its own max/sum pass): the same selection,
// judged against the float64 reference exactly as without.
class SelectBlocksFromCompressedLse : public ::testing::TestWithParam<SelectCase> {};

TEST_P(SelectBlocksFromCompressedLse, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const SelectCase& c = GetParam();
  const SelectInputs in = make_select_inputs(c, 9000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  const at::Tensor q = in.q.to(at::kCUDA), kc = in.kc.to(at::kCUDA);
  BranchSpec spec;
  spec.branch = Branch::Compressed, spec.cmp_block = c.l, spec.cmp_stride = c.d, spec.scale = scale;
  const ForwardResult f = attention_forward(q, kc, at::randn_like(kc), spec);
  set_poison_outputs(true);
  const at::Tensor got = select_blocks(q, kc, c.l, c.d, c.lp, c.n, scale, f.lse).cpu();
  set_poison_outputs(false);
  EXPECT_EQ(last_select_blocks_kernel_version(), 2) << "this case should run the tensor-core kernel";
  expect_matches_reference(c, in, scale, got);
}

INSTANTIATE_TEST_SUITE_P(
    V2Cases, SelectBlocksFromCompressedLse, ::testing::ValuesIn(v2_cases()),
    [](const ::testing::TestParamInfo<SelectCase>& info) { return std::string(info.param.name); });

// The same input through v1 (forced) and v2: both equal the reference (exactly
// on tied inputs, where they must also equal each other bitwise).
class SelectBlocksV1AndV2 : public ::testing::TestWithParam<SelectCase> {};

TEST_P(SelectBlocksV1AndV2, BothMatchReference) {
  NSA_REQUIRE_CUDA();
  const SelectCase& c = GetParam();
  const SelectInputs in = make_select_inputs(c, 7000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  const bool prev = force_v1_kernels();
  set_force_v1_kernels(true);
  const at::Tensor got1 = run_select(c, in, scale);
  const int version1 = last_select_blocks_kernel_version();
  set_force_v1_kernels(false);
  const at::Tensor got2 = run_select(c, in, scale);
  const int version2 = last_select_blocks_kernel_version();
  set_force_v1_kernels(prev);
  EXPECT_EQ(version1, 1);
  EXPECT_EQ(version2, 2) << "this case should run the tensor-core kernel";
  {
    SCOPED_TRACE("v1");
    expect_matches_reference(c, in, scale, got1);
  }
  {
    SCOPED_TRACE("v2");
    expect_matches_reference(c, in, scale, got2);
  }
  if (c.tied) EXPECT_TRUE(at::equal(got1, got2)) << "v1 and v2 differ on tied scores";
}

INSTANTIATE_TEST_SUITE_P(
    V2Cases, SelectBlocksV1AndV2, ::testing::ValuesIn(v2_cases()),
    [](const ::testing::TestParamInfo<SelectCase>& info) { return std::string(info.param.name); });

// CTAs of 4 and of 8 warps (set_select_blocks_warps): both equal the
// reference, and each other bit for bit (a query's rows, its half sums and
// its blocks' sums are the same computation in either); 8 runs where it
// exists (half sums, dk 128 or 192), and the rule's choice is what ran.
class SelectBlocksWarps : public ::testing::TestWithParam<SelectCase> {};

TEST_P(SelectBlocksWarps, FourAndEightAgreeBitwise) {
  NSA_REQUIRE_CUDA();
  const SelectCase& c = GetParam();
  const SelectInputs in = make_select_inputs(c, 5000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  const int64_t h = c.H / c.G, h8 = (h + 7) / 8 * 8;
  const bool eight = 4 * (h8 - h) <= h8 && c.dk >= 128;  // half sums at dk >= 128
  const int prev = select_blocks_warps();
  at::Tensor got[3];
  int ran[3];
  const int asked[3] = {4, 8, 0};
  for (int i = 0; i < 3; ++i) {
    set_select_blocks_warps(asked[i]);
    got[i] = run_select(c, in, scale);
    ran[i] = last_select_blocks_warps();
  }
  set_select_blocks_warps(prev);
  ASSERT_EQ(last_select_blocks_kernel_version(), 2) << "this case should run the tensor-core kernel";
  EXPECT_EQ(ran[0], 4);
  EXPECT_EQ(ran[1], eight ? 8 : 4);
  EXPECT_EQ(ran[2], eight ? 8 : 4) << "the rule: 8 warps with half sums at dk >= 128";
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(::testing::Message() << ran[i] << " warps");
    expect_matches_reference(c, in, scale, got[i]);
  }
  EXPECT_TRUE(at::equal(got[0], got[1])) << "4 and 8 warps differ";
}

INSTANTIATE_TEST_SUITE_P(
    V2Cases, SelectBlocksWarps, ::testing::ValuesIn(v2_cases()),
    [](const ::testing::TestParamInfo<SelectCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nsa::cuda
