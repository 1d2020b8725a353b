// CPU tests of the reference itself and of the index arithmetic the kernels
// share (attention_ranges.h), against independent oracles: SDPA, per-query
// loops written from DESIGN.md §2, and hand-worked examples.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/fast_div.h"
#include "nsa/cuda/key_outer_chunks.h"

namespace nsa::cuda {
namespace {

at::Tensor rnd(at::IntArrayRef sizes, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(sizes, gen, at::TensorOptions().dtype(at::kDouble));
}

// Dense causal attention through SDPA (GQA by repeating K/V), [B,S,H,d] layout.
at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  const int64_t h = q.size(2) / k.size(2);
  const auto t = [](const at::Tensor& x) { return x.transpose(1, 2); };
  return t(at::scaled_dot_product_attention(t(q), t(k.repeat_interleave(h, 2)), t(v.repeat_interleave(h, 2)),
                                            {}, 0.0, true, scale));
}

TEST(BranchReference, WindowCoveringEverythingIsCausalAttention) {
  const at::Tensor q = rnd({2, 37, 4, 16}, 1), k = rnd({2, 37, 2, 16}, 2), v = rnd({2, 37, 2, 8}, 3);
  EXPECT_TRUE(at::allclose(ref_window_attention(q, k, v, 1000, 0.3), causal_sdpa(q, k, v, 0.3), 1e-10, 1e-12));
}

TEST(BranchReference, SelectingEveryBlockIsCausalAttention) {
  const int64_t S = 37, lp = 8, nb = (S + lp - 1) / lp;
  const at::Tensor q = rnd({1, S, 4, 16}, 4), k = rnd({1, S, 2, 16}, 5), v = rnd({1, S, 2, 8}, 6);
  const at::Tensor idx = at::arange(nb, at::kInt).view({1, 1, 1, nb}).expand({1, S, 2, nb}).contiguous();
  EXPECT_TRUE(at::allclose(ref_selected_attention(q, k, v, idx, lp, 0.3), causal_sdpa(q, k, v, 0.3), 1e-10,
                           1e-12));
}

TEST(BranchReference, WindowOneIsTheQueryOwnValue) {
  const at::Tensor q = rnd({1, 9, 2, 16}, 7), k = rnd({1, 9, 1, 16}, 8), v = rnd({1, 9, 1, 16}, 9);
  EXPECT_TRUE(at::allclose(ref_window_attention(q, k, v, 1, 0.5), v.expand({1, 9, 2, 16})));
}

TEST(BranchReference, CompressedLoopMatchesFormulaAndEmptyRowsAreZero) {
  const int64_t S = 30, l = 8, d = 4, Sc = (S - l) / d + 1;
  const at::Tensor q = rnd({1, S, 2, 16}, 10), kc = rnd({1, Sc, 1, 16}, 11), vc = rnd({1, Sc, 1, 16}, 12);
  const at::Tensor o = ref_compressed_attention(q, kc, vc, l, d, 0.25);
  for (int64_t t = 0; t < S; ++t)
    for (int64_t hd = 0; hd < 2; ++hd) {
      const int64_t n = t + 1 >= l ? (t + 1 - l) / d + 1 : 0;  // DESIGN.md n_cmp(t)
      at::Tensor want = at::zeros({16}, at::kDouble);
      if (n > 0) {
        const at::Tensor s = at::mv(kc[0].narrow(0, 0, n).select(1, 0), q[0][t][hd]) * 0.25;
        want = at::mv(vc[0].narrow(0, 0, n).select(1, 0).t(), at::softmax(s, 0));
      }
      EXPECT_TRUE(at::allclose(o[0][t][hd], want, 1e-10, 1e-12)) << "t=" << t;
    }
  EXPECT_TRUE(at::isfinite(o).all().item<bool>());
}

TEST(BranchReference, CompressedWithNoBlocksHasZeroGradients) {
  const at::Tensor q = rnd({1, 5, 2, 16}, 13).requires_grad_(true);
  const at::Tensor kc = rnd({1, 0, 1, 16}, 14).requires_grad_(true), vc = rnd({1, 0, 1, 16}, 15);
  const at::Tensor o = ref_compressed_attention(q, kc, vc, 8, 4, 0.25);
  o.sum().backward();
  EXPECT_EQ(o.abs().max().item<double>(), 0.0);
  EXPECT_EQ(q.grad().abs().max().item<double>(), 0.0);
}

// Hand-worked: l=4, d=2, l'=4, S=12, one head. All compressed keys equal, so
// every visible block has p = 1/n. At t=11: n_cmp = (12-4)/2+1 = 5, p = 0.2;
// compressed block i spans [2i, 2i+4). Selection block j spans [4j, 4j+4):
//   j=0 meets i=0,1 -> 0.4;  j=1 meets i=1,2,3 -> 0.6;  j=2 meets i=3,4 -> 0.4.
TEST(BranchReference, SelectionScoresHandWorked) {
  const at::Tensor q = rnd({1, 12, 1, 16}, 16);
  const at::Tensor kc = rnd({1, 1, 1, 16}, 17).expand({1, 5, 1, 16}).contiguous();
  const at::Tensor s = ref_selection_scores(q, kc, 4, 2, 4, 1.0);
  EXPECT_NEAR(s[0][11][0][0].item<double>(), 0.4, 1e-12);
  EXPECT_NEAR(s[0][11][0][1].item<double>(), 0.6, 1e-12);
  EXPECT_NEAR(s[0][11][0][2].item<double>(), 0.4, 1e-12);
  // t=5: n_cmp = 2 (i=0,1), p = 0.5; j=0 -> 1.0, j=1 -> 0.5; j=2 is in the future.
  EXPECT_NEAR(s[0][5][0][0].item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(s[0][5][0][1].item<double>(), 0.5, 1e-12);
  EXPECT_EQ(s[0][5][0][2].item<double>(), -INFINITY);
  // n=2 at t=11: forced 0, 2 (local), 1 (local-1) -> the two lowest forced: {0, 1}.
  EXPECT_TRUE(at::equal(ref_select_blocks(q, kc, 4, 2, 4, 2, 1.0)[0][11][0], at::tensor({0, 1}, at::kInt)));
  // n=5 at t=5: candidates 0, 1 only -> {0, 1, -1, -1, -1}.
  EXPECT_TRUE(at::equal(ref_select_blocks(q, kc, 4, 2, 4, 5, 1.0)[0][5][0],
                        at::tensor({0, 1, -1, -1, -1}, at::kInt)));
}

TEST(BranchReference, TiesGoToLowerIndex) {
  // l=d=4, l'=4: compressed block i == selection block i. All keys equal, t=23:
  // n_cmp = 6, every block scores 1/6; forced 0, 5, 4; the fourth pick among the
  // tied 1, 2, 3 must be 1.
  const at::Tensor q = rnd({1, 24, 1, 16}, 18);
  const at::Tensor kc = rnd({1, 1, 1, 16}, 19).expand({1, 6, 1, 16}).contiguous();
  EXPECT_TRUE(at::equal(ref_select_blocks(q, kc, 4, 4, 4, 4, 1.0)[0][23][0], at::tensor({0, 1, 4, 5}, at::kInt)));
}

TEST(KeyRanges, OverlapBoundsMatchBruteForce) {
  for (int l : {4, 8, 32})
    for (int d : {2, 4, 16})
      for (int lp : {4, 16, 64}) {
        if (l % d || lp % d) continue;
        for (int j = 0; j < 20; ++j) {
          const int lo = overlap_lo(j, l, d, lp), hi = overlap_hi(j, d, lp);
          for (int i = 0; i < 400; ++i) {
            const bool overlaps = i * d < (j + 1) * lp && i * d + l > j * lp;
            EXPECT_EQ(overlaps, i >= lo && i < hi) << "l=" << l << " d=" << d << " l'=" << lp << " j=" << j
                                                   << " i=" << i;
          }
        }
      }
}

TEST(KeyRanges, VisibleCountsMatchDesign) {
  EXPECT_EQ(n_cmp_visible(30, 32, 16), 0);
  EXPECT_EQ(n_cmp_visible(31, 32, 16), 1);
  EXPECT_EQ(n_cmp_visible(46, 32, 16), 1);
  EXPECT_EQ(n_cmp_visible(47, 32, 16), 2);
  int lo, hi;
  contiguous_query_range(Branch::Window, 32, 64, 1000, 512, 0, 0, &lo, &hi);
  EXPECT_EQ(lo, 32);
  EXPECT_EQ(hi, 63 + 512);  // key 63 is seen by queries up to 63 + 511
  selected_key_range(2, 140, 1000, 64, &lo, &hi);
  EXPECT_EQ(lo, 128);
  EXPECT_EQ(hi, 141);
  selected_key_range(3, 140, 1000, 64, &lo, &hi);
  EXPECT_EQ(hi - lo, 0) << "a block in the future contributes nothing";
}

// FastDiv against the built-in division (the oracle), over every divisor up to
// 2,100, powers of two and large divisors; numerators from 0 to 5,000, at and
// beside multiples of the divisor, random ones and the top of the range.
TEST(KeyRanges, FastDivMatchesDivision) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 2100; ++d) divisors.push_back(d);
  for (int k = 12; k <= 30; ++k) divisors.push_back(int64_t(1) << k), divisors.push_back((int64_t(1) << k) + 1);
  for (const int64_t d : {65521, 1000003, 123456789, 1073741823, 2147483647}) divisors.push_back(d);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(0, INT32_MAX);
  std::vector<int32_t> random_n(200);
  for (int32_t& n : random_n) n = any(rng);
  for (const int64_t d : divisors) {
    const FastDiv fd{static_cast<int>(d)};
    const auto check = [&](int64_t n) {
      if (n < 0 || n > INT32_MAX) return;
      ASSERT_EQ(int(n) / fd, int(n / d)) << "n=" << n << " d=" << d;
    };
    for (int64_t n = 0; n <= 5000; ++n) check(n);
    for (const int64_t k : std::vector<int64_t>{1, 2, 3, 1000, 65535, INT32_MAX / d})
      for (int64_t e = -1; e <= 1; ++e) check(k * d + e);
    for (const int32_t n : random_n) check(n);
    check(INT32_MAX);
  }
}

// The KeyOuter chunks against the plan they promise, found by brute force: the
// fewest chunks (k) whose longest, ceil(S / k) queries, keeps its partials
// within the budget (or one query where not even one fits), then that length;
// a forced length as it is, clamped to [1, S]. Every query covered, none twice,
// no chunk over the budget unless one query alone is; never 0 queries (the
// caller divides by it), S = 0 included.
TEST(KeyOuterChunks, FewestEqualChunksWithinTheBudget) {
  for (const int64_t S : {0, 1, 2, 7, 64, 1000, 8191, 8192, 8193, 65536})
    for (const int64_t per_query : {1, 3, 100, 266240, 1 << 20})
      for (const int64_t budget : {int64_t(1), int64_t(1000), int64_t(1) << 20, int64_t(1) << 30}) {
        const int64_t chunk = key_outer_chunk_queries(S, per_query, budget, 0);
        int64_t want = 1;
        for (int64_t k = 1; k <= S; ++k)
          if (((S + k - 1) / k) * per_query <= budget) {
            want = (S + k - 1) / k;
            break;
          }
        ASSERT_GE(chunk, 1) << "S=" << S;
        ASSERT_EQ(chunk, want) << "S=" << S << " per_query=" << per_query << " budget=" << budget;
        const int64_t chunks = (S + chunk - 1) / chunk;
        ASSERT_GE(chunks * chunk, S);
        ASSERT_LT((chunks - 1) * chunk, S) << "an empty chunk";
        if (per_query <= budget) ASSERT_LE(chunk * per_query, budget);
      }
  EXPECT_EQ(key_outer_chunk_queries(8192, 266240, int64_t(1) << 30, 0), 2731);  // paper_kernel at 8k: 3 chunks
  EXPECT_EQ(key_outer_chunk_queries(8192, 266240, int64_t(1) << 30, 37), 37);
  EXPECT_EQ(key_outer_chunk_queries(100, 1, 1 << 30, 500), 100);
}

}  // namespace
}  // namespace nsa::cuda
