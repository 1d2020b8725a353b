// The oracle against numbers worked out by hand from DESIGN.md §2 on a layer
// small enough to follow with pencil and paper, then against nsa_reference on
// random inputs (a check of the oracle, not of the model: two independent
// readings of the same equations agree).
#include "harness/probes/oracle/nsa_oracle.h"

#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <cmath>

#include "nsa/nsa_layer.h"

namespace harness::oracle {
namespace {

// The hand-worked layer: D=3, H=2 heads in G=1 group, dk=2, dv=1; compression
// l=2, d=1 with mean φ; selection l'=2, n=4; window w=3; S=9.
// Token t is x_t = (a_t, 1, y_t) with y_t = t+1 and a_t = 1 only at t=1.
//   q head 0 = (α·a_t, 0), q head 1 = 0;  every branch: k = (1, 0), v = y_t.
//   gate: every logit 0 (g = 1/2) but slc of head 0, whose bias is ln 3 (g = 3/4).
//   W_O copies head h's output to model dimension h.
// α is chosen so that at t=1 head 0 weighs key 1 three times key 0 after RoPE:
// q·k_j = α·cos(1−j), so p_1/p_0 = exp((α/√2)(1 − cos 1)) = 3.
struct HandLayer {
  nsa::ModelConfig cfg;
  nsa::NsaWeights w;
  at::Tensor x;
};
HandLayer hand_layer() {
  HandLayer h;
  auto& c = h.cfg;
  c.d_model = 3, c.n_heads = 2, c.n_kv_groups = 1, c.d_k = 2, c.d_v = 1;
  c.nsa.cmp_block = 2, c.nsa.cmp_stride = 1, c.nsa.sel_block = 2, c.nsa.sel_count = 4, c.nsa.window = 3;
  c.nsa.phi = "mean";
  auto z = [](std::vector<int64_t> s) { return at::zeros(s, at::kDouble); };
  const double alpha = std::sqrt(2.0) * std::log(3.0) / (1.0 - std::cos(1.0));
  h.w.wq = z({3, 4});
  h.w.wq[0][0] = alpha;
  for (int b = 0; b < 3; ++b) {
    h.w.wk[b] = z({3, 2});
    h.w.wk[b][1][0] = 1.0;
    h.w.wv[b] = z({3, 1});
    h.w.wv[b][2][0] = 1.0;
  }
  h.w.gate_w1 = z({3, 1});
  h.w.gate_b1 = z({1});
  h.w.gate_w2 = z({1, 6});
  h.w.gate_b2 = z({6});
  h.w.gate_b2[1 * 2 + 0] = std::log(3.0);  // column c·H + h: branch slc (1) of head 0
  h.w.wo = z({2, 3});
  h.w.wo[0][0] = 1.0;
  h.w.wo[1][1] = 1.0;
  h.x = z({1, 9, 3});
  for (int t = 0; t < 9; ++t) h.x[0][t][1] = 1.0, h.x[0][t][2] = t + 1.0;
  h.x[0][1][0] = 1.0;
  return h;
}

double at3(const at::Tensor& t, int64_t i, int64_t h, int64_t c) { return t[0][i][h][c].item<double>(); }

TEST(NsaOracleHandWorked, FirstTokenSeesOnlyItselfAndNoCompressedBlock) {
  auto h = hand_layer();
  auto r = nsa_oracle(h.w, h.x, h.cfg, {0});
  for (int head = 0; head < 2; ++head) {
    EXPECT_DOUBLE_EQ(at3(r.o[kCmp], 0, head, 0), 0.0);  // no block complete: zero, not NaN
    EXPECT_DOUBLE_EQ(at3(r.o[kSlc], 0, head, 0), 1.0);  // y_0
    EXPECT_DOUBLE_EQ(at3(r.o[kWin], 0, head, 0), 1.0);
  }
  // out_0 = 3/4·1 + 1/2·1 (head 0), 1/2·1 + 1/2·1 (head 1).
  EXPECT_DOUBLE_EQ(r.out[0][0][0].item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(r.out[0][0][1].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r.out[0][0][2].item<double>(), 0.0);
  EXPECT_EQ(r.selected[r.selection_row(0, 0, 0)], (std::vector<int64_t>{0}));
}

TEST(NsaOracleHandWorked, RopeTurnsTheQueryByTheRelativePositionAndGatesFollowTheirColumns) {
  auto h = hand_layer();
  auto r = nsa_oracle(h.w, h.x, h.cfg, {1});
  // Head 0 at t=1: weights 1/4, 3/4 on y = 1, 2 in the window and the selected block 0.
  EXPECT_NEAR(at3(r.o[kWin], 0, 0, 0), 1.75, 1e-12);
  EXPECT_NEAR(at3(r.o[kSlc], 0, 0, 0), 1.75, 1e-12);
  // One compressed block (tokens 0, 1; mean φ): Ṽ_0 = 1.5 whatever the weights.
  EXPECT_NEAR(at3(r.o[kCmp], 0, 0, 0), 1.5, 1e-12);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(at3(r.o[c], 0, 1, 0), 1.5, 1e-12);  // head 1: uniform
  EXPECT_NEAR(at3(r.gates, 0, 0, kSlc), 0.75, 1e-12);
  EXPECT_NEAR(at3(r.gates, 0, 0, kCmp), 0.5, 1e-12);
  EXPECT_NEAR(at3(r.gates, 0, 1, kSlc), 0.5, 1e-12);
  // out = 1/2·1.5 + 3/4·1.75 + 1/2·1.75 = 2.9375; head 1: 1/2·(3·1.5) = 2.25.
  EXPECT_NEAR(r.out[0][0][0].item<double>(), 2.9375, 1e-12);
  EXPECT_NEAR(r.out[0][0][1].item<double>(), 2.25, 1e-12);
}

TEST(NsaOracleHandWorked, SelectionSumsTheGroupsHeadsForcesThreeBlocksAndBreaksTiesTowardTheLowerIndex) {
  auto h = hand_layer();
  auto r = nsa_oracle(h.w, h.x, h.cfg, {8});
  // t=8: both heads attend uniformly (q = 0) to the 8 visible blocks i = 0..7,
  // each p = 1/8. Selection block j = tokens [2j, 2j+2) overlaps blocks 2j−1, 2j, 2j+1.
  // Scores (two heads): j=0: 2/8·2, j=1..3: 3/8·2, j=4: only i=7 visible, 1/8·2.
  const auto& s = r.block_scores[r.selection_row(0, 0, 0)];
  ASSERT_EQ(s.size(), 5u);
  const double expected[5] = {0.5, 0.75, 0.75, 0.75, 0.25};
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(s[j], expected[j], 1e-12) << "block " << j;
  // Forced 0, 4 (current), 3 (previous); the fourth: 1 and 2 tie at 0.75 → 1.
  EXPECT_EQ(r.selected[r.selection_row(0, 0, 0)], (std::vector<int64_t>{0, 1, 3, 4}));
  // Selected tokens {0,1,2,3,6,7,8}: y mean 34/7. Window tokens 6..8: y mean 8.
  // Compressed: the mean of block means i + 1.5 over i = 0..7 = 5.
  for (int head = 0; head < 2; ++head) {
    EXPECT_NEAR(at3(r.o[kSlc], 0, head, 0), 34.0 / 7.0, 1e-12);
    EXPECT_NEAR(at3(r.o[kWin], 0, head, 0), 8.0, 1e-12);
    EXPECT_NEAR(at3(r.o[kCmp], 0, head, 0), 5.0, 1e-12);
  }
  EXPECT_NEAR(r.out[0][0][0].item<double>(), 71.0 / 7.0, 1e-12);  // 1/2·5 + 3/4·34/7 + 1/2·8
  EXPECT_NEAR(r.out[0][0][1].item<double>(), 125.0 / 14.0, 1e-12);
}

TEST(OracleTopN, TakesEveryCandidateWhenThereAreFewerThanN) {
  nsa::NsaParams p;
  p.sel_block = 16, p.sel_count = 4;
  EXPECT_EQ(oracle_top_n({0.1, 0.2}, 20, p), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(oracle_top_n({0.0}, 3, p), (std::vector<int64_t>{0}));
}

TEST(OracleTopN, KeepsForcedBlocksWhateverTheirScoreAndFillsByScore) {
  nsa::NsaParams p;
  p.sel_block = 16, p.sel_count = 4;
  // t=100: current block 6, forced {0, 5, 6}; the best other is 2.
  EXPECT_EQ(oracle_top_n({0, 0.1, 0.9, 0.3, 0.3, 0, 0}, 100, p), (std::vector<int64_t>{0, 2, 5, 6}));
  // A tie between 3 and 4 goes to 3.
  EXPECT_EQ(oracle_top_n({0, 0.1, 0.0, 0.3, 0.3, 0, 0}, 100, p), (std::vector<int64_t>{0, 3, 5, 6}));
}

// Random layers: the oracle and nsa_reference (an independent reading of the
// same equations in ATen) agree to float64 rounding at every position.
void expect_agrees_with_reference(const std::string& phi) {
  nsa::ModelConfig c;  // the tiny config's shape
  c.d_model = 64, c.n_heads = 4, c.n_kv_groups = 2, c.d_k = 16, c.d_v = 16;
  c.nsa.cmp_block = 8, c.nsa.cmp_stride = 4, c.nsa.sel_block = 16, c.nsa.sel_count = 4, c.nsa.window = 32;
  c.nsa.phi = phi;
  at::manual_seed(11);
  auto w = nsa::init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble)).to(at::kCPU, at::kDouble);
  const int64_t B = 2, S = 75;
  auto x = at::randn({B, S, c.d_model}, at::kDouble) * 4.0;  // sharp enough that selection is decided by scores
  std::vector<int64_t> T;
  for (int64_t t = 0; t < S; ++t) T.push_back(t);
  auto r = nsa_oracle(w, x, c, T);
  at::NoGradGuard ng;
  nsa::Runtime rt;
  nsa::BranchOutputs ref;
  auto y = nsa::nsa_attention(w, x, c, rt, 0, nsa::Path::reference, &ref);
  for (int b = 0; b < 3; ++b) EXPECT_LT((r.o[b] - ref.o[b]).abs().max().item<double>(), 1e-10) << "branch " << b;
  EXPECT_LT((r.out - y).abs().max().item<double>(), 1e-10);
  auto idx = ref.block_idx.cpu();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t g = 0; g < c.n_kv_groups; ++g) {
        std::vector<int64_t> got;
        for (int64_t s = 0; s < c.nsa.sel_count; ++s)
          if (int64_t j = idx[b][t][g][s].item<int64_t>(); j >= 0) got.push_back(j);
        EXPECT_EQ(r.selected[r.selection_row(b, t, g)], got) << "b " << b << " t " << t << " g " << g;
      }
}

TEST(NsaOracleAgainstReference, AgreesOnRandomLayersWithTheMlpPhi) { expect_agrees_with_reference("mlp"); }
TEST(NsaOracleAgainstReference, AgreesOnRandomLayersWithTheMeanPhi) { expect_agrees_with_reference("mean"); }

}  // namespace
}  // namespace harness::oracle
