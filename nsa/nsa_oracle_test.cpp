// Oracles for the building blocks every path shares (nsa_ops): RoPE, the
// projections, the compression φ, the overlap of compressed and selection
// blocks, the gate and the branch combination. The reference path uses these
// same functions, so comparing paths with it cannot see a slip here; each test
// computes the expected value by hand from DESIGN.md §2 with plain loops over
// doubles, never from another function of the model.
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/csrc/autograd/autograd.h>

#include "nsa/nsa_ops.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

const auto kF64 = at::TensorOptions().dtype(at::kDouble);

// RoPE in rotate-half form (nsa_ops.h): coordinates e and e + dim/2 form a pair
// rotated by the angle pos · base^(−e/(dim/2)).
std::vector<double> rope_by_hand(const std::vector<double>& x, double pos, double base) {
  const size_t half = x.size() / 2;
  std::vector<double> out(x.size());
  for (size_t e = 0; e < half; ++e) {
    const double a = pos * std::pow(base, -double(e) / double(half));
    out[e] = x[e] * std::cos(a) - x[e + half] * std::sin(a);
    out[e + half] = x[e + half] * std::cos(a) + x[e] * std::sin(a);
  }
  return out;
}

std::vector<double> values(const at::Tensor& t) {
  auto c = t.to(at::kDouble).contiguous().view({-1});
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Oracle, RopeOfAKnownVectorAtAKnownPosition) {
  // dim 4, base 10000, position 3: pair (x0, x2) turns by 3 rad, pair (x1, x3) by 3/100 rad.
  auto x = at::tensor({1.0, 2.0, 3.0, 4.0}, kF64).view({1, 1, 1, 4});
  std::vector<double> want = {1 * std::cos(3.0) - 3 * std::sin(3.0), 2 * std::cos(0.03) - 4 * std::sin(0.03),
                              3 * std::cos(3.0) + 1 * std::sin(3.0), 4 * std::cos(0.03) + 2 * std::sin(0.03)};
  expect_near_all(values(apply_rope(x, /*pos0=*/3, 10000.0)), want, 1e-14);
  // Position 0 is the identity; the second of two tokens starting at p sits at p + 1.
  expect_near_all(values(apply_rope(x, 0, 10000.0)), {1, 2, 3, 4}, 0);
  auto two = at::cat({x, x}, 1);
  expect_near_all(values(apply_rope(two, 2, 10000.0).select(1, 1)), want, 1e-14);
}

TEST(Oracle, ProjectRotatesQueryAndEveryBranchKeyByItsPosition) {
  auto c = tiny();
  at::manual_seed(fresh_seed());
  NsaWeights w = init_nsa_weights(c, kF64);
  const int64_t S = 12;
  auto x = at::randn({1, S, c.d_model}, kF64);
  auto pj = project(w, x, c);
  at::NoGradGuard ng;
  auto check = [&](const at::Tensor& got, const at::Tensor& weight, int64_t heads, int64_t dim, const char* what) {
    auto raw = at::matmul(x, weight).view({1, S, heads, dim});  // x·W, before any rotation
    for (int64_t t : {int64_t(0), int64_t(1), int64_t(7), S - 1})
      for (int64_t h = 0; h < heads; ++h) {
        SCOPED_TRACE(std::string(what) + " t=" + std::to_string(t) + " head " + std::to_string(h));
        expect_near_all(values(got[0][t][h]), rope_by_hand(values(raw[0][t][h]), double(t), c.rope_base), 1e-12);
      }
  };
  check(pj.q, w.wq, c.n_heads, c.d_k, "q");
  const char* names[3] = {"k^cmp", "k^slc", "k^win"};
  for (int b = 0; b < 3; ++b) {
    check(pj.k[b], w.wk[b], c.n_kv_groups, c.d_k, names[b]);
    // Values are never rotated.
    EXPECT_TRUE(at::allclose(pj.v[b], at::matmul(x, w.wv[b]).view({1, S, c.n_kv_groups, c.d_v}), 0, 1e-14));
  }
}

TEST(Oracle, CompressionPhiAddsThePositionEmbeddingRowByRowThenTheMlp) {
  // φ(block) = W2·SiLU(W1·flatten(block + pe) + b1) + b2, pe row u added to token u of the block.
  const int64_t l = 3, dim = 2;
  at::manual_seed(fresh_seed());
  PhiWeights phi{at::randn({l, dim}, kF64), at::randn({l * dim, dim}, kF64), at::randn({dim}, kF64),
                 at::randn({dim, dim}, kF64), at::randn({dim}, kF64)};
  auto tokens = at::randn({2, l, dim}, kF64);  // two blocks
  auto got = compress_blocks(tokens, phi, "mlp");
  auto T = tokens.accessor<double, 3>();
  auto pe = phi.pe.accessor<double, 2>(), w1 = phi.w1.accessor<double, 2>(), w2 = phi.w2.accessor<double, 2>();
  auto b1 = phi.b1.accessor<double, 1>(), b2 = phi.b2.accessor<double, 1>();
  for (int64_t blk = 0; blk < 2; ++blk) {
    std::vector<double> hidden(dim), want(dim);
    for (int64_t o = 0; o < dim; ++o) {
      double s = b1[o];
      for (int64_t u = 0; u < l; ++u)
        for (int64_t e = 0; e < dim; ++e) s += (T[blk][u][e] + pe[u][e]) * w1[u * dim + e][o];
      hidden[o] = s / (1 + std::exp(-s));  // SiLU
    }
    for (int64_t o = 0; o < dim; ++o) {
      want[o] = b2[o];
      for (int64_t k = 0; k < dim; ++k) want[o] += hidden[k] * w2[k][o];
    }
    SCOPED_TRACE("block " + std::to_string(blk));
    expect_near_all(values(got[blk]), want, 1e-12);
  }
  // φ = mean: the plain average of the block's tokens.
  expect_near_all(values(compress_blocks(tokens, phi, "mean")[1]),
                  {(T[1][0][0] + T[1][1][0] + T[1][2][0]) / 3, (T[1][0][1] + T[1][1][1] + T[1][2][1]) / 3}, 1e-14);
}

// A random φ (hidden width 5) in float64, and a copy whose tensors are leaves
// that require grad (one per run of a gradient comparison).
PhiWeights random_phi(int64_t l, int64_t dim) {
  return PhiWeights{at::randn({l, dim}, kF64), at::randn({l * dim, 5}, kF64), at::randn({5}, kF64),
                    at::randn({5, dim}, kF64), at::randn({dim}, kF64)};
}
PhiWeights leaf_copy(const PhiWeights& phi) {
  const auto leaf = [](const at::Tensor& t) { return t.clone().requires_grad_(true); };
  return PhiWeights{leaf(phi.pe), leaf(phi.w1), leaf(phi.b1), leaf(phi.w2), leaf(phi.b2)};
}

// The definition: φ of each block cut out of seq [B,S,G,dim], block i = tokens
// [i·d, i·d + l) → [B, n_cmp, G, dim].
at::Tensor phi_of_each_block(const at::Tensor& seq, const PhiWeights& phi, int64_t l, int64_t d,
                             const std::string& kind) {
  std::vector<at::Tensor> blocks;
  for (int64_t i = 0; i * d + l <= seq.size(1); ++i)  // [B, G, l, dim] each
    blocks.push_back(compress_blocks(seq.narrow(1, i * d, l).transpose(1, 2), phi, kind));
  return at::stack(blocks, 1);
}

// compress_sequence (the CUDA paths' φ over a whole sequence) and its 16-bit
// form (overlapping blocks as shifted sums of per-chunk products when d
// divides l), both in float64, against φ applied to each block cut out of the
// sequence, as the definition and the reference path take it: values and every
// gradient; strides that divide the block (r = 1, 2, 3, 4), one that does
// not, S not a multiple of d, S ending exactly at the last block (the chunked
// form then keeps every token: m7c's S = 2048, l = 32, d = 16), and mean pooling.
TEST(Oracle, CompressingTheSequenceIsPhiOfEachBlock) {
  for (const auto& [l, d, S, kind] : {std::tuple{32, 16, 101, "mlp"}, std::tuple{32, 16, 96, "mlp"},
                                      std::tuple{4, 4, 9, "mlp"}, std::tuple{12, 4, 30, "mlp"},
                                      std::tuple{16, 4, 36, "mlp"}, std::tuple{6, 4, 23, "mlp"},
                                      std::tuple{8, 4, 19, "mean"}}) {
    SCOPED_TRACE(std::string("l=") + std::to_string(l) + " d=" + std::to_string(d) + " S=" + std::to_string(S) + " " + kind);
    const int64_t B = 2, G = 2, dim = 3;
    at::manual_seed(fresh_seed());
    NsaParams P;
    P.cmp_block = l, P.cmp_stride = d, P.phi = kind;
    const PhiWeights phi0 = random_phi(l, dim);
    const at::Tensor seq0 = at::randn({B, S, G, dim}, kF64);
    const at::Tensor dy = at::randn({B, (S - l) / d + 1, G, dim}, kF64);
    const auto run = [&](int whole) {  // 0: block by block, 1: compress_sequence, 2: its chunked form
      const at::Tensor seq = seq0.clone().requires_grad_(true);
      const PhiWeights phi = leaf_copy(phi0);
      const at::Tensor y = whole == 1   ? compress_sequence(seq, phi, P)
                           : whole == 2 ? compress_overlapping_chunks(seq, phi, P)  // the 16-bit form, in float64
                                        : phi_of_each_block(seq, phi, l, d, kind);
      std::vector<at::Tensor> inputs{seq, phi.w1, phi.b1, phi.w2, phi.b2};
      if (std::string(kind) == "mlp") inputs.push_back(phi.pe);
      auto grads = torch::autograd::grad({y}, inputs, {dy}, /*retain_graph=*/false, /*create_graph=*/false,
                                         /*allow_unused=*/true);
      grads.insert(grads.begin(), y.detach());
      return grads;
    };
    const auto want = run(0);
    const bool chunked = std::string(kind) == "mlp" && l % d == 0;
    for (int form = 1; form <= (chunked ? 2 : 1); ++form) {
      const auto got = run(form);
      ASSERT_EQ(got[0].sizes(), want[0].sizes());
      for (size_t i = 0; i < want.size(); ++i) {
        if (!want[i].defined()) {
          EXPECT_FALSE(got[i].defined() && got[i].abs().max().item<double>() > 0) << "output " << i;
          continue;
        }
        ASSERT_TRUE(got[i].defined()) << "output " << i;
        EXPECT_TRUE(at::allclose(got[i], want[i], 1e-12, 1e-12))
            << "form " << form << ", output " << i << " (0: values, 1: d seq, ...)";
      }
    }
  }
}

// Keys and values compressed at once (the layer's 16-bit path), each with its
// own φ, in float64: values and every gradient of both equal φ applied to each
// block cut out of each sequence. S = 96 ends at the last block (no narrow),
// S = 101 does not; r = 2 and 3.
TEST(Oracle, CompressingKeysAndValuesAtOnceIsPhiOfEachBlockOfEach) {
  for (const auto& [l, d, S] : {std::tuple{32, 16, 96}, std::tuple{32, 16, 101}, std::tuple{12, 4, 30}}) {
    SCOPED_TRACE("l=" + std::to_string(l) + " d=" + std::to_string(d) + " S=" + std::to_string(S));
    const int64_t B = 2, G = 2, dim = 3;
    at::manual_seed(fresh_seed());
    NsaParams P;
    P.cmp_block = l, P.cmp_stride = d, P.phi = "mlp";
    const PhiWeights phi0[2] = {random_phi(l, dim), random_phi(l, dim)};
    const at::Tensor seq0[2] = {at::randn({B, S, G, dim}, kF64), at::randn({B, S, G, dim}, kF64)};
    const int64_t n_cmp = (S - l) / d + 1;
    const at::Tensor dy[2] = {at::randn({B, n_cmp, G, dim}, kF64), at::randn({B, n_cmp, G, dim}, kF64)};
    const auto run = [&](bool together) {
      std::vector<at::Tensor> inputs, y(2);
      at::Tensor seq[2];
      PhiWeights phi[2];
      for (int e = 0; e < 2; ++e) {
        seq[e] = seq0[e].clone().requires_grad_(true);
        phi[e] = leaf_copy(phi0[e]);
        for (const at::Tensor& t : {seq[e], phi[e].pe, phi[e].w1, phi[e].b1, phi[e].w2, phi[e].b2}) inputs.push_back(t);
      }
      if (together) {
        const auto kv = compress_overlapping_chunks_pair(seq[0], seq[1], phi[0], phi[1], P);
        y = {kv[0], kv[1]};
      } else {
        for (int e = 0; e < 2; ++e) y[e] = phi_of_each_block(seq[e], phi[e], l, d, "mlp");
      }
      auto grads = torch::autograd::grad(y, inputs, {dy[0], dy[1]});
      grads.insert(grads.begin(), {y[0].detach(), y[1].detach()});
      return grads;
    };
    const auto want = run(false), got = run(true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(at::allclose(got[i], want[i], 1e-12, 1e-12))
          << "output " << i << " (0, 1: values of k, v; then per sequence: d seq, d pe, d w1, d b1, d w2, d b2)";
  }
}

TEST(Oracle, OverlapOfTinyCompressedAndSelectionBlocks) {
  // l=8, d=4, l'=16: compressed block i = tokens [4i, 4i+8); selection block j = [16j, 16j+16).
  // They share a token iff 4i < 16j+16 and 16j < 4i+8, i.e. i ∈ {4j−1, …, 4j+3}.
  NsaParams P = tiny().nsa;
  const int n_cmp = 12, n_sel = 3;
  const std::vector<std::vector<int>> overlapping = {{0, 1, 2, 3}, {3, 4, 5, 6, 7}, {7, 8, 9, 10, 11}};
  auto m = overlap_matrix(n_cmp, n_sel, P, kF64);
  for (int j = 0; j < n_sel; ++j)
    for (int i = 0; i < n_cmp; ++i) {
      const bool want = std::find(overlapping[j].begin(), overlapping[j].end(), i) != overlapping[j].end();
      EXPECT_EQ(m[i][j].item<double>(), want ? 1.0 : 0.0) << "i=" << i << " j=" << j;
      EXPECT_EQ(cmp_overlaps_sel(i, j, P), want) << "i=" << i << " j=" << j;
    }
}

TEST(Oracle, GateIsAnIndependentSigmoidPerHeadAndBranch) {
  // With fc1 = 0 and its bias 0, SiLU(0) = 0 and the logits are fc2's bias: column c·H + h is branch c of head h.
  auto c = tiny();
  NsaWeights w = init_nsa_weights(c, kF64);
  at::NoGradGuard ng;
  w.gate_w1.zero_();
  w.gate_b1.zero_();
  const int64_t H = c.n_heads;
  std::vector<double> bias(3 * H);
  for (int64_t col = 0; col < 3 * H; ++col) bias[col] = 0.7 * double(col) - 3.0;  // −3 … 5.4: all different
  w.gate_b2.copy_(at::tensor(bias, kF64));
  auto g = gate_values(w, at::randn({1, 2, c.d_model}, kF64), c);  // [1,2,H,3]
  ASSERT_EQ(g.sizes(), (std::vector<int64_t>{1, 2, H, 3}));
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t br = 0; br < 3; ++br)
        EXPECT_NEAR(g[0][t][h][br].item<double>(), 1 / (1 + std::exp(-bias[br * H + h])), 1e-15)
            << "t=" << t << " head " << h << " branch " << br;
}

TEST(Oracle, OutputWeighsEachBranchByItsOwnGate) {
  // One head, dv = 2, W_O = identity: o = g_cmp·o_cmp + g_slc·o_slc + g_win·o_win.
  BranchOutputs b;
  b.o[0] = at::tensor({1.0, 2.0}, kF64).view({1, 1, 1, 2});
  b.o[1] = at::tensor({10.0, 20.0}, kF64).view({1, 1, 1, 2});
  b.o[2] = at::tensor({100.0, 200.0}, kF64).view({1, 1, 1, 2});
  auto gates = at::tensor({0.2, 0.3, 0.5}, kF64).view({1, 1, 1, 3});
  NsaWeights w;
  w.wo = at::eye(2, kF64);
  expect_near_all(values(combine_branches(b, gates, w)), {0.2 * 1 + 0.3 * 10 + 0.5 * 100, 0.2 * 2 + 0.3 * 20 + 0.5 * 200},
                  1e-12);
}

// A registered gate combine (the CUDA kernel in CUDA builds) serves CUDA
// tensors only: on the CPU the ATen definition still runs.
TEST(Oracle, CpuTensorsKeepTheAtenCombineWhenAKernelIsRegistered) {
  static int calls = 0;
  register_gate_combine([](const at::Tensor (&)[3], const at::Tensor&, const GateColumns&) {
    ++calls;
    return at::Tensor();
  });
  BranchOutputs b;
  for (int c = 0; c < 3; ++c) b.o[c] = at::full({1, 1, 1, 1}, std::pow(10.0, c), kF64);
  NsaWeights w;
  w.wo = at::eye(1, kF64);
  const double y = combine_branches(b, at::tensor({0.2, 0.3, 0.5}, kF64).view({1, 1, 1, 3}), w).item<double>();
  register_gate_combine(nullptr);
  EXPECT_EQ(calls, 0);
  EXPECT_NEAR(y, 0.2 + 0.3 * 10 + 0.5 * 100, 1e-12);
}

}  // namespace
}  // namespace nsa
