// The parity comparison against layers broken on purpose: one wrong key in one
// query of the selected branch, a wrong block choice, a tie resolved the wrong
// way, swapped gate columns. Each must be named where it is — and a healthy
// path, or outputs that only carry bf16 rounding, must pass.
#include "harness/probes/parity_check.h"

#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include "nsa/nsa_layer.h"

namespace harness {
namespace {

nsa::ModelConfig tiny_shape() {
  nsa::ModelConfig c;
  c.d_model = 64, c.n_heads = 4, c.n_kv_groups = 2, c.d_k = 16, c.d_v = 16;
  c.nsa.cmp_block = 8, c.nsa.cmp_stride = 4, c.nsa.sel_block = 16, c.nsa.sel_count = 4, c.nsa.window = 32;
  return c;
}

// max(D, l·dk, S) of the layers below: the longest sum a path accumulates.
constexpr int64_t kLongestSum = 128;

struct Layer {
  nsa::ModelConfig c = tiny_shape();
  nsa::NsaWeights w;
  at::Tensor x;
  std::vector<int64_t> T;
  oracle::OracleOutput ref;
};

// S=100: 7 selection blocks for n=4, a window of 32 that truncates, S not a
// multiple of any block size. Inputs scaled so attention is far from uniform.
Layer make_layer(int64_t S = 100, double x_scale = 4.0) {
  Layer l;
  at::manual_seed(5);
  l.w = nsa::init_nsa_weights(l.c, at::TensorOptions().dtype(at::kDouble)).to(at::kCPU, at::kDouble);
  l.x = at::randn({2, S, l.c.d_model}, at::kDouble) * x_scale;
  l.T = parity_positions(S, l.c.nsa);
  l.ref = oracle::nsa_oracle(l.w, l.x, l.c, l.T);
  return l;
}

PathRun run(const Layer& l, nsa::Path path, const at::Tensor& x) {
  at::NoGradGuard ng;
  nsa::Runtime rt;
  PathRun r;
  r.out = nsa::nsa_attention(l.w, x, l.c, rt, 0, path, &r.branches);
  r.gates = nsa::gate_values(l.w, x, l.c);
  return r;
}

// The layer output a path computes from its own branches and gates.
at::Tensor combined(const PathRun& r, const nsa::NsaWeights& w) {
  auto g = r.gates;
  auto mixed = g.select(-1, 0).unsqueeze(-1) * r.branches.o[0] + g.select(-1, 1).unsqueeze(-1) * r.branches.o[1] +
               g.select(-1, 2).unsqueeze(-1) * r.branches.o[2];
  return at::matmul(mixed.flatten(2), w.wo);
}

// Head h's selected-branch output at t with key `u` left out (the slip of a
// `<` for a `≤`), recomputed from the layer's own projections and selection.
at::Tensor slc_without_key(const Layer& l, const PathRun& r, int64_t t, int64_t h, int64_t* dropped) {
  auto pj = nsa::project(l.w, l.x, l.c);
  const int64_t g = h / l.c.heads_per_group();
  std::vector<int64_t> tokens;
  for (int64_t s = 0; s < l.c.nsa.sel_count; ++s) {
    const int64_t j = r.branches.block_idx[0][t][g][s].item<int64_t>();
    for (int64_t u = j * l.c.nsa.sel_block; j >= 0 && u < (j + 1) * l.c.nsa.sel_block && u <= t; ++u) tokens.push_back(u);
  }
  auto idx = at::tensor(tokens, at::kLong);
  auto k = pj.k[1][0].select(1, g).index_select(0, idx), v = pj.v[1][0].select(1, g).index_select(0, idx);
  auto p = at::softmax(at::matmul(k, pj.q[0][t][h]) / std::sqrt(double(l.c.d_k)), 0);
  auto o = at::matmul(p, v);
  // Leave out the key that carries the most weight in the output.
  const int64_t i = (p.unsqueeze(1) * (v - o).abs()).amax(1).argmax().item<int64_t>();
  *dropped = tokens[i];
  auto keep = at::ones_like(p).index_fill_(0, at::tensor({i}), 0.0);
  auto q = p * keep;
  return at::matmul(q / q.sum(), v);
}

TEST(ParityCheck, AcceptsTheBatchedAndSequentialPathsOfAHealthyLayerInFloat64) {
  auto l = make_layer();
  const auto tol = parity_tolerance(at::kDouble, kLongestSum);
  for (auto path : {nsa::Path::batched, nsa::Path::sequential, nsa::Path::reference}) {
    auto lp = compare_layer(l.ref, run(l, path, l.x), l.w, l.c, tol, {});
    EXPECT_TRUE(lp.mismatches.empty()) << nsa::path_name(path) << ": " << lp.summary.dump();
  }
}

TEST(ParityCheck, NamesTheSelectedBranchAndPositionOfOneMissingKeyInOneQuery) {
  auto l = make_layer();
  auto r = run(l, nsa::Path::batched, l.x);
  const int64_t t = 57, h = 3;
  int64_t dropped = -1;
  r.branches.o[1] = r.branches.o[1].clone();
  r.branches.o[1][0][t][h] = slc_without_key(l, r, t, h, &dropped);
  r.out = combined(r, l.w);  // the slip flows into the layer output, as it would in the path
  auto lp = compare_layer(l.ref, r, l.w, l.c, parity_tolerance(at::kDouble, kLongestSum), {});
  ASSERT_EQ(lp.mismatches.size(), 1u) << lp.summary.dump();
  EXPECT_EQ(lp.mismatches[0].what, "slc");
  EXPECT_EQ(lp.mismatches[0].position, t);
  EXPECT_EQ(lp.mismatches[0].head, h);
  EXPECT_EQ(lp.mismatches[0].batch, 0);
  EXPECT_EQ(lp.mismatches[0].evidence["positions_heads_over_tolerance"], 1) << "dropped key " << dropped;
}

// bf16: a correct path's outputs carry rounding; the same one-key slip must
// still stand out, while the rounding alone passes.
TEST(ParityCheck, OneMissingKeyStandsAboveBf16RoundingWhichAlonePasses) {
  auto l = make_layer();
  auto bf = [](const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kDouble); };
  PathRun rounded;
  for (int b = 0; b < 3; ++b) rounded.branches.o[b] = bf(l.ref.o[b]);
  rounded.gates = bf(l.ref.gates);
  rounded.out = bf(combined(rounded, l.w));
  rounded.branches.block_idx = run(l, nsa::Path::batched, l.x).branches.block_idx;
  const auto tol = parity_tolerance(at::kBFloat16, kLongestSum);
  auto healthy = compare_layer(l.ref, rounded, l.w, l.c, tol, {});
  EXPECT_TRUE(healthy.mismatches.empty()) << healthy.summary.dump();

  auto exact = run(l, nsa::Path::batched, l.x);
  const int64_t t = 57, h = 3;
  int64_t dropped = -1;
  auto slip = slc_without_key(l, exact, t, h, &dropped) - exact.branches.o[1][0][t][h];
  PathRun broken = rounded;
  broken.branches.o[1] = rounded.branches.o[1].clone();
  broken.branches.o[1][0][t][h] += slip;
  broken.out = bf(combined(broken, l.w));
  auto lp = compare_layer(l.ref, broken, l.w, l.c, tol, {});
  ASSERT_EQ(lp.mismatches.size(), 1u) << lp.summary.dump();
  EXPECT_EQ(lp.mismatches[0].what, "slc");
  EXPECT_EQ(lp.mismatches[0].position, t);
  EXPECT_EQ(lp.mismatches[0].head, h);
}

TEST(ParityCheck, NamesAGroupThatChoseAWorseBlockThanTheScoresAllow) {
  auto l = make_layer();
  auto r = run(l, nsa::Path::batched, l.x);
  // t=90: blocks 0..5 are candidates, 0, 5 and 4 forced; replace the one chosen
  // on score by the worst-scoring other candidate.
  const int64_t t = 90, g = 1;
  const auto& row = l.ref.selected[l.ref.selection_row(0, t, g)];
  const auto& scores = l.ref.block_scores[l.ref.selection_row(0, t, g)];
  int64_t free_pick = -1, worst = -1;
  for (int64_t j : row)
    if (!oracle::forced_block(j, t, l.c.nsa)) free_pick = j;
  for (int64_t j = 1; j < 4; ++j)
    if (j != free_pick && (worst < 0 || scores[j] < scores[worst])) worst = j;
  ASSERT_GE(free_pick, 0);
  std::vector<int64_t> wrong;
  for (int64_t j : row) wrong.push_back(j == free_pick ? worst : j);
  std::sort(wrong.begin(), wrong.end());
  r.branches.block_idx = r.branches.block_idx.clone();
  for (size_t s = 0; s < wrong.size(); ++s) r.branches.block_idx[0][t][g][s] = wrong[s];
  auto lp = compare_layer(l.ref, r, l.w, l.c, parity_tolerance(at::kDouble, kLongestSum), {});
  ASSERT_FALSE(lp.mismatches.empty());
  EXPECT_EQ(lp.mismatches[0].what, "selection");
  EXPECT_EQ(lp.mismatches[0].position, t);
  EXPECT_EQ(lp.mismatches[0].head, g);
}

TEST(ParityCheck, ExactTiesOnTheAllZeroInputMustGoToTheLowerIndex) {
  auto l = make_layer();
  auto zeros = at::zeros_like(l.x);
  auto ref = oracle::nsa_oracle(l.w, zeros, l.c, l.T);
  ParityOptions strict;
  strict.compare_outputs = false, strict.exact_ties_where_representable = true;
  const auto tol = parity_tolerance(at::kDouble, kLongestSum);
  for (auto path : {nsa::Path::batched, nsa::Path::sequential})
    EXPECT_TRUE(compare_layer(ref, run(l, path, zeros), l.w, l.c, tol, strict).mismatches.empty())
        << nsa::path_name(path);
  // t=68: 16 visible compressed blocks, each weight exactly 1/16. Candidates
  // 0..4, forced 0, 4, 3; blocks 1 and 2 each overlap 5 visible blocks: a tie
  // the rule gives to block 1.
  const int64_t t = 68;
  ASSERT_TRUE(uniform_weights_exact(t, l.c.nsa));
  ASSERT_EQ(ref.selected[ref.selection_row(0, t, 0)], (std::vector<int64_t>{0, 1, 3, 4}));
  auto r = run(l, nsa::Path::batched, zeros);
  r.branches.block_idx = r.branches.block_idx.clone();
  r.branches.block_idx[0][t][0] = at::tensor({0, 2, 3, 4}, at::kLong);
  auto lp = compare_layer(ref, r, l.w, l.c, tol, strict);
  ASSERT_EQ(lp.mismatches.size(), 1u);
  EXPECT_EQ(lp.mismatches[0].what, "selection");
  EXPECT_EQ(lp.mismatches[0].position, t);
  // Without the exactness argument the same swap is a tie rounding could explain, not a finding.
  ParityOptions lenient;
  lenient.compare_outputs = false;
  EXPECT_TRUE(compare_layer(ref, r, l.w, l.c, tol, lenient).mismatches.empty());
}

TEST(UniformWeightsExact, OnlyWherePowersOfTwoBlocksAreVisible) {
  nsa::NsaParams p;
  p.cmp_block = 8, p.cmp_stride = 4;
  EXPECT_TRUE(uniform_weights_exact(3, p));    // none visible
  EXPECT_TRUE(uniform_weights_exact(7, p));    // 1
  EXPECT_TRUE(uniform_weights_exact(11, p));   // 2
  EXPECT_FALSE(uniform_weights_exact(15, p));  // 3
  EXPECT_TRUE(uniform_weights_exact(67, p));   // 16
  EXPECT_FALSE(uniform_weights_exact(99, p));  // 24
}

TEST(ParityCheck, SwappedGateColumnsAreAGateFindingAndAWrongCombinationACombineFinding) {
  auto l = make_layer();
  auto r = run(l, nsa::Path::batched, l.x);
  auto swapped = r;
  swapped.gates = at::stack({r.gates.select(-1, 0), r.gates.select(-1, 2), r.gates.select(-1, 1)}, -1);
  auto lp = compare_layer(l.ref, swapped, l.w, l.c, parity_tolerance(at::kDouble, kLongestSum), {});
  ASSERT_FALSE(lp.mismatches.empty());
  EXPECT_EQ(lp.mismatches[0].what, "gate");
  // The path mixes its branches with the wrong columns but reports the right gates.
  auto miscombined = r;
  miscombined.out = combined(swapped, l.w);
  auto lc = compare_layer(l.ref, miscombined, l.w, l.c, parity_tolerance(at::kDouble, kLongestSum), {});
  ASSERT_EQ(lc.mismatches.size(), 1u) << lc.summary.dump();
  EXPECT_EQ(lc.mismatches[0].what, "combine");
}

TEST(ParityPositions, EveryPositionOfAShortSequence) {
  auto T = parity_positions(100, tiny_shape().nsa);
  ASSERT_EQ(T.size(), 100u);
  EXPECT_EQ(T.front(), 0);
  EXPECT_EQ(T.back(), 99);
}

// Every boundary kind, written from the definitions (DESIGN.md §2): the last
// position before and the first at which compressed block i is visible
// (i·d + l − 1), and both sides of a selection-block start j·l'.
struct Boundaries {
  std::vector<int64_t> cmp, sel;  // the later position of each pair
};
Boundaries boundaries(int64_t S, const nsa::NsaParams& p) {
  Boundaries b;
  for (int64_t i = 0; i * p.cmp_stride + p.cmp_block - 1 < S; ++i) b.cmp.push_back(i * p.cmp_stride + p.cmp_block - 1);
  for (int64_t j = 1; j * p.sel_block < S; ++j) b.sel.push_back(j * p.sel_block);
  return b;
}

TEST(ParityPositions, ALongSequenceKeepsBothEndsTheWindowEdgeAndEveryEarlyBoundary) {
  nsa::NsaParams p;  // paper defaults: l=32, d=16, l'=64, w=512
  const int64_t S = 2048;
  auto T = parity_positions(S, p);
  auto has = [&](int64_t t) { return std::binary_search(T.begin(), T.end(), t); };
  EXPECT_GE(T.size(), 64u);
  EXPECT_LT(T.size(), size_t(S));
  for (int64_t t : {int64_t(0), S - 1, int64_t(510), int64_t(511), int64_t(512), int64_t(513)}) EXPECT_TRUE(has(t)) << t;
  // The first 16 selection blocks: every boundary of both kinds.
  const Boundaries b = boundaries(S, p);
  for (int64_t e : b.cmp)
    if (e < 16 * p.sel_block) EXPECT_TRUE(has(e) && has(e - 1)) << e;
  for (int64_t s : b.sel)
    if (s < 16 * p.sel_block) EXPECT_TRUE(has(s) && has(s - 1)) << s;
}

// At 64k the checked positions stay few (the float64 oracle's cost per position
// grows with t), yet every eighth of the sequence after the prefix, up to the
// last position, holds both sides of a compressed-block end and of a
// selection-block start, and every t with a power of two of visible compressed
// blocks (the zeros input's exact ties) is there.
TEST(ParityPositions, AVeryLongSequenceChecksEveryBoundaryKindUpToItsEnd) {
  nsa::NsaParams p;
  const int64_t S = 65536;
  auto T = parity_positions(S, p);
  auto has = [&](int64_t t) { return std::binary_search(T.begin(), T.end(), t); };
  EXPECT_LE(T.size(), 400u);
  EXPECT_TRUE(has(0) && has(S - 1));
  const Boundaries b = boundaries(S, p);
  const int64_t prefix = 16 * p.sel_block;
  for (int64_t k = 0; k < 8; ++k) {
    const int64_t lo = prefix + k * (S - prefix) / 8, hi = prefix + (k + 1) * (S - prefix) / 8;
    auto pair_in = [&](const std::vector<int64_t>& v) {
      return std::any_of(v.begin(), v.end(), [&](int64_t e) { return e - 1 >= lo && e < hi && has(e) && has(e - 1); });
    };
    EXPECT_TRUE(pair_in(b.cmp)) << "no compressed-block end checked in [" << lo << ", " << hi << ")";
    EXPECT_TRUE(pair_in(b.sel)) << "no selection-block start checked in [" << lo << ", " << hi << ")";
  }
  // The last stretch reaches the end: the last boundary of each kind.
  EXPECT_TRUE(has(b.cmp.back()) && has(b.cmp.back() - 1)) << b.cmp.back();
  EXPECT_TRUE(has(b.sel.back()) && has(b.sel.back() - 1)) << b.sel.back();
  for (int64_t t = 0; t < S; ++t)
    if (t + 1 >= p.cmp_block && uniform_weights_exact(t, p) && (t + 1 - p.cmp_block) % p.cmp_stride == 0)
      EXPECT_TRUE(has(t)) << "n_vis a power of two first at t = " << t;
}

}  // namespace
}  // namespace harness
