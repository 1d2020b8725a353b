// Oracles written from DESIGN.md §2 by hand, independent of every path: inputs
// built so the expected output is a formula (uniform attention when q = 0, a
// two-key softmax), and the block selection recomputed with plain loops.
#include <cmath>
#include <functional>
#include <limits>

#include "nsa/nsa_paths.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

using PathFn = std::function<BranchOutputs(const Projected&, const NsaWeights&, const ModelConfig&)>;
std::vector<std::pair<std::string, PathFn>> all_paths() {
  return {
      {"reference", [](auto& p, auto& w, auto& c) { return nsa_reference(p, w, c); }},
      {"batched", [](auto& p, auto& w, auto& c) { return nsa_batched(p, w, c, runtime_with(), 0); }},
      {"batched_mask", [](auto& p, auto& w, auto& c) { return nsa_batched(p, w, c, runtime_with("NSA_USE_SEL_MASK", "1"), 0); }},
      {"sequential", [](auto& p, auto& w, auto& c) { return nsa_sequential(p, w, c, runtime_with(), 0); }},
  };
}

Projected random_projected(const ModelConfig& c, int64_t B, int64_t S, uint64_t seed) {
  at::manual_seed(seed);
  auto o = at::TensorOptions().dtype(at::kDouble);
  Projected p;
  p.q = at::randn({B, S, c.n_heads, c.d_k}, o) * 2;
  for (int b = 0; b < 3; ++b) {
    p.k[b] = at::randn({B, S, c.n_kv_groups, c.d_k}, o) * 2;
    p.v[b] = at::randn({B, S, c.n_kv_groups, c.d_v}, o);
  }
  return p;
}

TEST(Spec, WindowCoversExactlyTheLastWTokens) {
  auto c = tiny("mean");
  auto p = random_projected(c, 1, 70, fresh_seed());
  p.q.zero_();  // uniform attention: the output is the mean of the window's values
  NsaWeights w = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  for (auto& [name, fn] : all_paths()) {
    SCOPED_TRACE(name);
    auto o = fn(p, w, c).o[2];
    for (int64_t t : {0, 1, 30, 31, 32, 33, 69}) {
      int64_t lo = std::max<int64_t>(0, t - c.nsa.window + 1);
      for (int64_t h = 0; h < c.n_heads; ++h) {
        int64_t g = h / c.heads_per_group();
        auto expected = p.v[2][0].narrow(0, lo, t - lo + 1).select(1, g).mean(0);
        ASSERT_LE(rel_max_err(o[0][t][h], expected), 1e-12) << "t=" << t << " h=" << h;
      }
    }
  }
}

TEST(Spec, CompressedBlockVisibleOnlyOnceItsLastTokenArrived) {
  auto c = tiny("mean");  // l=8, d=4: block i = tokens [4i, 4i+8), visible from t = 4i+7
  auto p = random_projected(c, 1, 40, fresh_seed());
  p.q.zero_();
  NsaWeights w = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  for (auto& [name, fn] : all_paths()) {
    SCOPED_TRACE(name);
    auto o = fn(p, w, c).o[0];
    for (int64_t t = 0; t < 40; ++t) {
      int64_t visible = 0;
      for (int64_t i = 0; 4 * i + 7 < 40; ++i) visible += (4 * i + 7 <= t);
      for (int64_t h = 0; h < c.n_heads; ++h) {
        int64_t g = h / c.heads_per_group();
        at::Tensor expected = at::zeros({c.d_v}, at::kDouble);
        for (int64_t i = 0; i < visible; ++i) expected += p.v[0][0].narrow(0, 4 * i, 8).select(1, g).mean(0) / double(visible);
        ASSERT_LE(rel_max_err(o[0][t][h], expected), 1e-12) << "t=" << t << " h=" << h;
      }
    }
  }
}

TEST(Spec, ScoresAreScaledByOneOverSqrtDk) {
  auto c = tiny("mean");
  auto p = random_projected(c, 1, 2, fresh_seed());
  NsaWeights w = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  for (auto& [name, fn] : all_paths()) {
    SCOPED_TRACE(name);
    auto o = fn(p, w, c).o[2];  // window at t = 1 sees keys 0 and 1
    for (int64_t h = 0; h < c.n_heads; ++h) {
      int64_t g = h / c.heads_per_group();
      double s0 = p.q[0][1][h].dot(p.k[2][0][0][g]).item<double>() / std::sqrt(16.0);
      double s1 = p.q[0][1][h].dot(p.k[2][0][1][g]).item<double>() / std::sqrt(16.0);
      double m = std::max(s0, s1), e0 = std::exp(s0 - m), e1 = std::exp(s1 - m);
      auto expected = (p.v[2][0][0][g] * e0 + p.v[2][0][1][g] * e1) / (e0 + e1);
      ASSERT_LE(rel_max_err(o[0][1][h], expected), 1e-12) << "h=" << h;
    }
  }
}

// Block selection recomputed from the spec with plain loops over doubles.
std::vector<int64_t> oracle_selection(const Projected& p, const ModelConfig& c, int64_t b, int64_t t, int64_t g) {
  const auto& P = c.nsa;
  const int64_t hpg = c.heads_per_group(), n_sel = t / P.sel_block + 1;
  std::vector<double> score(n_sel, 0.0);
  const int64_t n_vis = t + 1 >= P.cmp_block ? (t + 1 - P.cmp_block) / P.cmp_stride + 1 : 0;
  for (int64_t h = g * hpg; h < (g + 1) * hpg; ++h) {
    std::vector<double> logit(n_vis);
    double mx = -1e300, z = 0;
    for (int64_t i = 0; i < n_vis; ++i) {
      double dot = 0;
      for (int64_t d = 0; d < c.d_k; ++d) {
        double kc = 0;  // φ = mean over the block's tokens
        for (int64_t u = i * P.cmp_stride; u < i * P.cmp_stride + P.cmp_block; ++u) kc += p.k[0][b][u][g][d].item<double>();
        dot += p.q[b][t][h][d].item<double>() * kc / P.cmp_block;
      }
      logit[i] = dot / std::sqrt(double(c.d_k));
      mx = std::max(mx, logit[i]);
    }
    for (int64_t i = 0; i < n_vis; ++i) z += std::exp(logit[i] - mx);
    for (int64_t i = 0; i < n_vis; ++i)
      for (int64_t j = 0; j < n_sel; ++j) {
        bool overlap = i * P.cmp_stride < (j + 1) * P.sel_block && j * P.sel_block < i * P.cmp_stride + P.cmp_block;
        if (overlap) score[j] += std::exp(logit[i] - mx) / z;
      }
  }
  std::vector<int64_t> chosen;
  const int64_t cur = t / P.sel_block;
  for (int64_t j : {int64_t(0), cur, cur - 1})
    if (j >= 0 && std::find(chosen.begin(), chosen.end(), j) == chosen.end()) chosen.push_back(j);
  while (static_cast<int64_t>(chosen.size()) < std::min<int64_t>(P.sel_count, n_sel)) {
    int64_t best = -1;
    for (int64_t j = 0; j < n_sel; ++j)
      if (std::find(chosen.begin(), chosen.end(), j) == chosen.end() && (best < 0 || score[j] > score[best])) best = j;
    chosen.push_back(best);
  }
  std::sort(chosen.begin(), chosen.end());
  while (static_cast<int64_t>(chosen.size()) < P.sel_count) chosen.push_back(-1);
  return chosen;
}

TEST(Spec, SelectionSumsTheGroupAndKeepsForcedBlocks) {
  auto c = tiny("mean");  // l'=16, n=4: from t=64 on there are more candidates than n
  auto p = random_projected(c, 2, 100, fresh_seed());
  NsaWeights w = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  for (auto& [name, fn] : all_paths()) {
    SCOPED_TRACE(name);
    auto idx = fn(p, w, c).block_idx.cpu();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t : {0, 15, 16, 40, 63, 64, 70, 99})
        for (int64_t g = 0; g < c.n_kv_groups; ++g) {
          auto expected = oracle_selection(p, c, b, t, g);
          std::vector<int64_t> got(c.nsa.sel_count);
          for (int64_t s = 0; s < c.nsa.sel_count; ++s) got[s] = idx[b][t][g][s].item<int64_t>();
          ASSERT_EQ(got, expected) << "b=" << b << " t=" << t << " g=" << g;
        }
  }
}

TEST(Spec, TiedBlockScoresGoToTheLowerIndexOnEveryPath) {
  // q = 0: every visible compressed block gets probability 1/n_vis, so a selection
  // block's score is (number of visible compressed blocks it overlaps) / n_vis.
  // With l=8, d=4, l'=16, block j ≥ 1 overlaps compressed blocks 4j−1 … 4j+3: five
  // of them, all visible once t ≥ 16j+19, so the non-forced candidates tie exactly
  // (n_vis a power of two keeps every sum exact) and the lower index must win.
  auto c = tiny("mean");
  auto p = random_projected(c, 1, 135, fresh_seed());
  p.q.zero_();
  NsaWeights w = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  // t=67..70: n_vis = 16, current block 4, forced {0, 3, 4}, blocks 1 and 2 tie for the last place.
  // t=131..134: n_vis = 32, current block 8, forced {0, 7, 8}, blocks 1–6 tie.
  const std::vector<std::pair<int64_t, std::vector<int64_t>>> expected = {
      {67, {0, 1, 3, 4}}, {70, {0, 1, 3, 4}}, {131, {0, 1, 7, 8}}, {134, {0, 1, 7, 8}}};
  for (auto& [name, fn] : all_paths()) {
    SCOPED_TRACE(name);
    auto idx = fn(p, w, c).block_idx.cpu();
    for (auto& [t, blocks] : expected)
      for (int64_t g = 0; g < c.n_kv_groups; ++g) {
        std::vector<int64_t> got(c.nsa.sel_count);
        for (int64_t s = 0; s < c.nsa.sel_count; ++s) got[s] = idx[0][t][g][s].item<int64_t>();
        EXPECT_EQ(got, blocks) << "t=" << t << " g=" << g;
      }
  }
}

TEST(SelectTopN, TiesGoToLowerIndexAndForcedBlocksAlwaysStay) {
  NsaParams P;
  P.sel_block = 16;
  P.sel_count = 4;
  // t = 100: current block 6, forced {0, 5, 6}; all other scores tie → block 1 wins.
  std::vector<double> flat(7, 0.5);
  EXPECT_EQ(select_top_n(flat, 100, P), (std::vector<int64_t>{0, 1, 5, 6}));
  // The best non-forced block wins even when forced ones score lower.
  std::vector<double> s = {0, 0.1, 0.2, 0.9, 0.3, 0, 0};
  EXPECT_EQ(select_top_n(s, 100, P), (std::vector<int64_t>{0, 3, 5, 6}));
  // Fewer candidates than n: take all, never index past them.
  EXPECT_EQ(select_top_n({0.0, 0.0}, 20, P), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(select_top_n({0.0}, 3, P), (std::vector<int64_t>{0}));
}

TEST(SelectTopN, MarginIsTheRelativeGapAtTheCut) {
  NsaParams P;
  P.sel_block = 16;
  P.sel_count = 4;
  double margin = 0.0;
  // t = 100: forced {0, 5, 6}, one slot by rank among blocks 1..4: 0.9 taken,
  // 0.3 the best left out: (0.9 - 0.3) / 0.9.
  EXPECT_EQ(select_top_n({0, 0.1, 0.2, 0.9, 0.3, 0, 0}, 100, P, &margin), (std::vector<int64_t>{0, 3, 5, 6}));
  EXPECT_DOUBLE_EQ(margin, (0.9 - 0.3) / 0.9);
  // An exact tie at the cut: margin 0.
  EXPECT_EQ(select_top_n(std::vector<double>(7, 0.5), 100, P, &margin), (std::vector<int64_t>{0, 1, 5, 6}));
  EXPECT_EQ(margin, 0.0);
  // Every candidate taken (t = 40: blocks 0, 1, 2): nothing was ranked against another.
  EXPECT_EQ(select_top_n({0.2, 0.1, 0.3}, 40, P, &margin), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(margin, std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace nsa
