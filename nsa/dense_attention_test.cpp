// The dense yardstick against a per-query brute force written from the
// definitions (float64 loops; RoPE in the rotate-half form by hand), sharing no
// code with nsa/dense_attention.cpp beyond the weights it reads.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nsa/dense_attention.h"
#include "nsa/model.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {

// Row t of x·W ([S,D]·[D,N·dim]) as head-major vectors, rotated for position t.
std::vector<std::vector<double>> head_vectors(const at::Tensor& xw_row, int64_t heads, int64_t dim, int64_t t,
                                              double base, bool rotate) {
  auto a = xw_row.accessor<double, 1>();
  std::vector<std::vector<double>> out(heads, std::vector<double>(dim));
  const int64_t half = dim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < dim; ++i) {
      const double v = a[h * dim + i];
      if (!rotate) { out[h][i] = v; continue; }
      const int64_t pair = i < half ? i : i - half;
      const double angle = t * std::pow(base, -2.0 * pair / dim);
      const double partner = i < half ? -a[h * dim + i + half] : a[h * dim + i - half];
      out[h][i] = v * std::cos(angle) + partner * std::sin(angle);
    }
  return out;
}

TEST(DenseAttention, EqualsPerQueryCausalSoftmaxWithEachGroupsKeys) {
  auto c = testing::tiny();
  c.attention = "dense";
  const uint64_t seed = testing::fresh_seed();
  at::manual_seed(seed);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  const DenseWeights w = init_dense_weights(c, o);
  const int64_t B = 2, S = 11, H = c.n_heads, G = c.n_kv_groups, dk = c.d_k, dv = c.d_v;
  auto x = at::randn({B, S, c.d_model}, o);
  at::Tensor got;
  {
    at::NoGradGuard ng;
    got = dense_attention(w, x, c);
  }
  // Brute force: o_t = Σ_h head_h(t) W_O, head_h(t) = Σ_{s≤t} softmax_s(q_t·k_s/√dk) v_s of group h/(H/G).
  auto want = at::zeros({B, S, c.d_model}, o);
  at::NoGradGuard ng;
  for (int64_t b = 0; b < B; ++b) {
    auto xq = at::matmul(x[b], w.wq), xk = at::matmul(x[b], w.wk), xv = at::matmul(x[b], w.wv);
    auto heads = at::zeros({S, H * dv}, o);
    auto ha = heads.accessor<double, 2>();
    for (int64_t t = 0; t < S; ++t) {
      auto q = head_vectors(xq[t], H, dk, t, c.rope_base, true);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / G);
        std::vector<double> score(t + 1);
        double top = -INFINITY;
        for (int64_t s = 0; s <= t; ++s) {
          auto k = head_vectors(xk[s], G, dk, s, c.rope_base, true)[g];
          double dot = 0;
          for (int64_t i = 0; i < dk; ++i) dot += q[h][i] * k[i];
          score[s] = dot / std::sqrt(double(dk));
          top = std::max(top, score[s]);
        }
        double sum = 0;
        for (auto& e : score) sum += (e = std::exp(e - top));
        for (int64_t s = 0; s <= t; ++s) {
          auto v = head_vectors(xv[s], G, dv, s, c.rope_base, false)[g];
          for (int64_t i = 0; i < dv; ++i) ha[t][h * dv + i] += score[s] / sum * v[i];
        }
      }
    }
    want[b] = at::matmul(heads, w.wo);
  }
  EXPECT_LT(testing::rel_max_err(got, want), 1e-12) << "seed " << seed;
}

TEST(DenseAttention, AModelOfItHasExactlyTheParametersTheConfigCounts) {
  auto c = testing::tiny();
  c.attention = "dense";
  Model m(c, at::TensorOptions().dtype(at::kFloat));
  long long n = 0;
  for (auto& [name, t] : m.parameters()) n += t.numel();
  EXPECT_EQ(n, c.parameter_count());
  EXPECT_THROW(m.attention_weights(0), c10::Error);
}

TEST(DenseAttention, AnUnknownAttentionKindIsAConfigIssue) {
  auto c = testing::tiny();
  c.attention = "sparse";
  auto issues = validate(c);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "attention");
}

}  // namespace
}  // namespace nsa
