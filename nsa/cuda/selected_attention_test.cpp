// selected_attention vs ref_selected_attention (float64): output and every
// gradient, for block choices from select_blocks and from random draws.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/cuda/CUDAContext.h>

#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

// The branch under test and its float64 reference (on the CPU copy of the
// block indices), as check_branch takes them.
testing::AttnFn kernel(const at::Tensor& block_idx, int64_t sel_block, double scale,
                       BackwardDq dq = BackwardDq::kernel) {
  return [=](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return selected_attention(q, k, v, block_idx, sel_block, scale, dq);
  };
}
testing::AttnFn reference(const at::Tensor& block_idx, int64_t sel_block, double scale) {
  const at::Tensor idx = block_idx.cpu();
  return [=](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return ref_selected_attention(q, k, v, idx, sel_block, scale);
  };
}

// Block choices as the layer might make them: select_blocks on q and, standing
// in for the compressed keys, the means of k over blocks of l with stride d.
at::Tensor blocks_from_select(const testing::AttnInputs& in, int64_t l, int64_t d, int64_t sel_block, int64_t n,
                              double scale) {
  const int64_t S = in.k.size(1), S_cmp = testing::compressed_len(S, l, d);
  const at::Tensor kc = in.k.unfold(1, l, d).mean(-1).narrow(1, 0, S_cmp).contiguous();
  return select_blocks(in.q, kc, l, d, sel_block, n, scale);
}

// Every query chooses block 0 alone: in its last slot, -1 before it (the
// cases' source 2: one key tile every row sees, the others none).
at::Tensor block0_only(const testing::AttnInputs& in, int64_t B, int64_t S, int64_t G, int64_t n) {
  at::Tensor idx = at::full({B, S, G, n}, -1, in.q.options().dtype(at::kInt));
  idx.select(3, n - 1).fill_(0);
  return idx;
}

struct SelectedCase {
  const char* name;
  int64_t B, S, H, G, dk, dv, sel_block, n;
  at::ScalarType dtype;
  int source;  // 0: random draw, 1: select_blocks on q/k, 2: block 0 only
};
void PrintTo(const SelectedCase& c, std::ostream* os) { *os << c.name; }

class SelectedAttention : public ::testing::TestWithParam<SelectedCase> {};

TEST_P(SelectedAttention, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const SelectedCase& c = GetParam();
  const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, 2000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  at::Tensor block_idx;
  if (c.source == 0) {
    block_idx = testing::random_block_idx(c.B, c.S, c.G, c.n, c.sel_block, 77 + c.S);
  } else if (c.source == 1) {
    block_idx = blocks_from_select(in, 8, 4, c.sel_block, c.n, scale);
  } else {
    block_idx = block0_only(in, c.B, c.S, c.G, c.n);
  }
  // v2 has four tilings (nsa_cuda.h, SelectedTiling); each must compute the
  // same function, whatever the automatic choice would be for this shape.
  // QueryColumns applies to groups of <= 8 heads, blocks of whole 64-key
  // tiles and dk, dv in {64, 128}; KeyOuter (forward and dq) to 64-key blocks;
  // elsewhere the automatic choice runs in their place, which the hooks tell
  // apart. KeyOuter runs twice: in chunks of 37 queries, so that every case
  // with more crosses chunk boundaries, and in its default chunk (a whole test
  // sequence), where a block chosen by more than 1024 / h queries is cut into
  // several CTA units (block 0: every query chooses it).
  const SelectedTiling prev = selected_tiling();
  const int64_t prev_chunk = selected_key_outer_chunk();
  const bool v2 = c.dtype != at::kFloat;
  const bool columns_apply = v2 && c.H / c.G <= 8 && c.sel_block % 64 == 0 && (c.dk == 64 || c.dk == 128) &&
                             (c.dv == 64 || c.dv == 128);
  const auto v2_dim = [](int64_t d) { return d == 64 || d == 128 || d == 192; };
  const bool key_outer_apply = v2 && c.sel_block == 64 && c.n <= 32 && v2_dim(c.dk) && v2_dim(c.dv);
  struct Run {
    SelectedTiling tiling;
    int64_t key_outer_chunk;
    const char* label;
  };
  for (const Run& run : {Run{SelectedTiling::SharedRows, 0, "/shared_rows"},
                         Run{SelectedTiling::SplitKeys, 0, "/split_keys"},
                         Run{SelectedTiling::QueryColumns, 0, "/query_columns"},
                         Run{SelectedTiling::KeyOuter, 37, "/key_outer_chunks_of_37"},
                         Run{SelectedTiling::KeyOuter, 0, "/key_outer_one_chunk"}}) {
    const SelectedTiling tiling = run.tiling;
    set_selected_tiling(tiling);
    set_selected_key_outer_chunk(run.key_outer_chunk);
    const std::string name = std::string(c.name) + run.label;
    testing::check_branch(name.c_str(), in, kernel(block_idx, c.sel_block, scale),
                          reference(block_idx, c.sel_block, scale));
    if (tiling == SelectedTiling::KeyOuter) {
      BranchSpec spec;
      spec.branch = Branch::Selected, spec.block_idx = block_idx, spec.sel_block = c.sel_block, spec.scale = scale;
      const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
      EXPECT_EQ(last_forward_used_key_outer(), key_outer_apply) << name;
      (void)attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
      EXPECT_EQ(last_dq_used_key_outer(), key_outer_apply) << name;
    }
    if (tiling == SelectedTiling::QueryColumns) {
      BranchSpec spec;
      spec.branch = Branch::Selected, spec.block_idx = block_idx, spec.sel_block = c.sel_block, spec.scale = scale;
      const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
      EXPECT_EQ(last_forward_used_query_columns(), columns_apply) << name;
      (void)attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
      EXPECT_EQ(last_dq_used_query_columns(), columns_apply) << name;
    }
  }
  set_selected_tiling(prev);
  set_selected_key_outer_chunk(prev_chunk);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectedAttention,
    ::testing::Values(
        SelectedCase{"bf16_random_S107_l16_n4", 1, 107, 4, 2, 64, 64, 16, 4, at::kBFloat16, 0},
        SelectedCase{"fp16_random_B2_S130_l16_n3", 2, 130, 8, 2, 128, 128, 16, 3, at::kHalf, 0},
        SelectedCase{"fp32_random_fewer_blocks_than_n", 1, 40, 4, 1, 32, 16, 16, 8, at::kFloat, 0},
        SelectedCase{"fp32_S_less_than_block", 1, 11, 2, 1, 16, 16, 16, 4, at::kFloat, 0},
        SelectedCase{"bf16_from_select_blocks_S128_l32_n4", 1, 128, 8, 2, 64, 64, 32, 4, at::kBFloat16, 1},
        SelectedCase{"bf16_paper_heads_d192_dv128", 1, 96, 16, 1, 192, 128, 16, 4, at::kBFloat16, 1},
        SelectedCase{"fp32_block0_only", 2, 70, 4, 2, 16, 32, 16, 3, at::kFloat, 2},
        SelectedCase{"bf16_h64_per_group_d256", 1, 33, 64, 1, 256, 64, 8, 3, at::kBFloat16, 0},
        SelectedCase{"fp32_l64_partial_tiles", 1, 100, 2, 1, 16, 16, 64, 2, at::kFloat, 0},
        // Tensor-core (v2) tile boundaries: S around the 64-key tiles, h = 1, 6, 16 and
        // 40 (head chunks of 16), dk != dv, sel_block 8..64 (several blocks per tile).
        SelectedCase{"bf16_S1_h1_d64_l64", 1, 1, 1, 1, 64, 64, 64, 16, at::kBFloat16, 0},
        SelectedCase{"fp16_S63_h6_d64_l16_n4", 1, 63, 12, 2, 64, 64, 16, 4, at::kHalf, 0},
        SelectedCase{"bf16_S64_h16_d192_dv128_l64_n16", 1, 64, 16, 1, 192, 128, 64, 16, at::kBFloat16, 0},
        SelectedCase{"bf16_S65_h1_d128_l32_n3", 1, 65, 2, 2, 128, 128, 32, 3, at::kBFloat16, 0},
        SelectedCase{"fp16_S129_h6_d64_dv192_l8_n5", 1, 129, 6, 1, 64, 192, 8, 5, at::kHalf, 0},
        SelectedCase{"bf16_B2_S257_h16_d192_dv128_l64_n4_selected", 2, 257, 32, 2, 192, 128, 64, 4, at::kBFloat16, 1},
        SelectedCase{"bf16_S257_h6_d64_l16_n16_four_tiles", 1, 257, 12, 2, 64, 64, 16, 16, at::kBFloat16, 0},
        SelectedCase{"bf16_S130_h40_head_chunks_d128_dv64", 1, 130, 40, 1, 128, 64, 16, 3, at::kBFloat16, 0},
        SelectedCase{"bf16_block0_only_h6_d192", 2, 70, 12, 2, 192, 192, 16, 3, at::kBFloat16, 2},
        SelectedCase{"bf16_S200_h6_d64_l48_n3_three_key_slices", 1, 200, 12, 2, 64, 64, 48, 3, at::kBFloat16, 0},
        SelectedCase{"fp16_S300_h2_d128_l128_n2_two_key_tiles", 1, 300, 4, 2, 128, 128, 128, 2, at::kHalf, 0},
        // sel_block a multiple of the 64-key tile: each tile lies in one block and
        // a row's visible columns are one span (query_tiles.cuh, SelectedTile);
        // m7c's heads per group, the last block cut, random and selected indices.
        SelectedCase{"bf16_B2_S333_h6_d64_l64_n4_one_block_tiles", 2, 333, 12, 2, 64, 64, 64, 4, at::kBFloat16, 0},
        SelectedCase{"fp16_S333_h6_d64_l64_n3_one_block_tiles_selected", 1, 333, 6, 1, 64, 64, 64, 3, at::kHalf, 1},
        // QueryColumns' own edges: 8 heads (every column), 3 (odd, padding
        // columns), dk != dv, 128-key blocks (two tiles a block), n above the
        // visible blocks, one query past the end in the last CTA of 16.
        SelectedCase{"bf16_S700_h8_d64_dv128_l64_n5_columns", 1, 700, 16, 2, 64, 128, 64, 5, at::kBFloat16, 0},
        SelectedCase{"fp16_B2_S255_h3_d128_dv64_l128_n16_columns", 2, 255, 3, 1, 128, 64, 128, 16, at::kHalf, 1},
        SelectedCase{"bf16_S2047_h6_d64_l64_n16_columns", 1, 2047, 12, 2, 64, 64, 64, 16, at::kBFloat16, 0},
        // v2 walks the union of a CTA's queries' blocks in passes of at most 1024
        // blocks (query_tiles.cuh): 1100 blocks of one key take two passes whatever
        // the head dims; h = 1 puts 64 queries in a CTA (every bit of the chooser
        // mask), h = 6 ten queries with rows that straddle queries inside a warp.
        SelectedCase{"bf16_S1100_h1_d64_l1_n8_two_union_passes", 1, 1100, 2, 2, 64, 64, 1, 8, at::kBFloat16, 0},
        SelectedCase{"fp16_S1100_h6_d64_l1_n12_two_union_passes", 1, 1100, 6, 1, 64, 64, 1, 12, at::kHalf, 0},
        SelectedCase{"bf16_S1100_h6_d64_l4_n12_select_blocks", 1, 1100, 12, 2, 64, 64, 4, 12, at::kBFloat16, 1},
        // KeyOuter at the paper's shape, 40 blocks: 68 chunks of 37 queries,
        // or one chunk where block 0's 2500 queries take 40 units of 64.
        SelectedCase{"bf16_S2500_h16_d192_dv128_l64_n16_key_outer", 1, 2500, 32, 2, 192, 128, 64, 16, at::kBFloat16,
                     1}),
    [](const ::testing::TestParamInfo<SelectedCase>& info) { return std::string(info.param.name); });

// A parameterized case's inputs, chosen blocks and branch, for the fixtures
// below (Case: SelectedCase or AtomicDqCase): blocks drawn at random (source
// 0), chosen by select_blocks from block means of l keys every d (1), or block
// 0 only (2); seeds input_seed + S and blocks_seed + S.
template <typename Case>
class SelectedProblem : public ::testing::TestWithParam<Case> {
 protected:
  void make(int64_t input_seed, int64_t blocks_seed, int64_t l, int64_t d) {
    const Case& c = this->GetParam();
    in_ = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, input_seed + c.S);
    scale_ = 1.0 / std::sqrt(double(c.dk));
    block_idx_ = c.source == 0   ? testing::random_block_idx(c.B, c.S, c.G, c.n, c.sel_block, blocks_seed + c.S)
                 : c.source == 1 ? blocks_from_select(in_, l, d, c.sel_block, c.n, scale_)
                                 : block0_only(in_, c.B, c.S, c.G, c.n);
    spec_.branch = Branch::Selected, spec_.block_idx = block_idx_, spec_.sel_block = c.sel_block;
    spec_.scale = scale_;
  }

  testing::AttnInputs in_;
  double scale_ = 0;
  at::Tensor block_idx_;
  BranchSpec spec_;
};

// KeyOuter's forward in CTAs of 4 and 8 warps, on mma.sync and on wgmma.
class SelectedKeyOuterWarps : public SelectedProblem<SelectedCase> {
 protected:
  // The case's problem, KeyOuter forced; the settings the tests change come
  // back after each.
  void SetUp() override {
    NSA_REQUIRE_CUDA();
    make(3000, 91, 8, 4);
    set_selected_tiling(SelectedTiling::KeyOuter);
  }
  void TearDown() override {
    set_selected_key_outer_mma(prev_mma_);
    set_selected_key_outer_warps(prev_warps_);
    set_selected_key_outer_chunk(prev_chunk_);
    set_selected_tiling(prev_tiling_);
  }
  // The forward and backward of this case against the float64 reference.
  void check(const std::string& name) {
    const int64_t sel_block = GetParam().sel_block;
    testing::check_branch(name, in_, kernel(block_idx_, sel_block, scale_), reference(block_idx_, sel_block, scale_));
  }

  const SelectedTiling prev_tiling_ = selected_tiling();
  const int64_t prev_chunk_ = selected_key_outer_chunk();
  const int prev_warps_ = selected_key_outer_warps();
  const SelectedMma prev_mma_ = selected_key_outer_mma();
};

// KeyOuter's forward on mma.sync (asked: on Hopper the layer's default is
// wgmma, tested below) in CTAs of 4 and of 8 warps
// (set_selected_key_outer_warps): each matches the float64 reference (output
// and gradients), and the two give the same bits (a row's partial is one
// warp's work in either; only which warp takes a group changes). On sm_90 the
// rule takes 8 at 192/128, where 8 warps fit 2 CTAs of 94 KB (registers capped
// at 128 for it) and 4 warps at most 3 CTAs of 68.6 KB.
TEST_P(SelectedKeyOuterWarps, FourAndEightAgreeBitwise) {
  const SelectedCase& c = GetParam();
  set_selected_key_outer_mma(SelectedMma::MmaSync);
  const int asked[3] = {4, 8, 0};
  for (const int64_t chunk : {int64_t(37), int64_t(0)}) {
    set_selected_key_outer_chunk(chunk);
    ForwardResult f[3];
    int ran[3];
    for (int i = 0; i < 3; ++i) {
      set_selected_key_outer_warps(asked[i]);
      f[i] = attention_forward(in_.q, in_.k, in_.v, spec_);
      ASSERT_TRUE(last_forward_used_key_outer()) << c.name;
      ran[i] = last_selected_key_outer_warps();
      EXPECT_FALSE(last_selected_key_outer_wgmma()) << c.name;
      if (i < 2) check(std::string(c.name) + "/warps_" + std::to_string(asked[i]) + "/chunk_" + std::to_string(chunk));
    }
    EXPECT_EQ(ran[0], 4);
    EXPECT_EQ(ran[1], 8);
    EXPECT_TRUE(ran[2] == 4 || ran[2] == 8) << ran[2];
    if (at::cuda::getCurrentDeviceProperties()->major == 9 && c.dk == 192 && c.dv == 128)
      EXPECT_EQ(ran[2], 8) << "the rule at 192/128 on sm_90";
    EXPECT_TRUE(at::equal(f[0].o, f[1].o)) << c.name << ": o differs between 4 and 8 warps, chunk " << chunk;
    EXPECT_TRUE(at::equal(f[0].lse, f[1].lse)) << c.name << ": lse differs between 4 and 8 warps, chunk " << chunk;
  }
}

// The forward's products on Hopper's warpgroup MMAs (SelectedMma::Wgmma): in
// CTAs of 4 and 8 warps, in chunks of 37 queries and in one, against the
// float64 reference (output and gradients); the two sizes bit for bit (a row's
// result does not depend on the other rows of its warpgroup's MMAs, and the
// warpgroups take the same 4 groups either way); the default takes it. Skipped
// where wgmma cannot run (wgmma_declines()).
TEST_P(SelectedKeyOuterWarps, WgmmaMatchesReference) {
  if (const std::string why = wgmma_declines(); !why.empty()) GTEST_SKIP() << why;
  const SelectedCase& c = GetParam();
  set_selected_key_outer_mma(SelectedMma::Wgmma);
  for (const int64_t chunk : {int64_t(37), int64_t(0)}) {
    set_selected_key_outer_chunk(chunk);
    ForwardResult f[2];
    for (int i = 0; i < 2; ++i) {
      const int warps = 4 * (i + 1);
      set_selected_key_outer_warps(warps);
      f[i] = attention_forward(in_.q, in_.k, in_.v, spec_);
      ASSERT_TRUE(last_forward_used_key_outer()) << c.name;
      EXPECT_TRUE(last_selected_key_outer_wgmma()) << c.name;
      EXPECT_EQ(last_selected_key_outer_warps(), warps) << c.name;
      check(std::string(c.name) + "/wgmma/warps_" + std::to_string(warps) + "/chunk_" + std::to_string(chunk));
    }
    EXPECT_TRUE(at::equal(f[0].o, f[1].o)) << c.name << ": wgmma o differs between 4 and 8 warps, chunk " << chunk;
    EXPECT_TRUE(at::equal(f[0].lse, f[1].lse)) << c.name << ": wgmma lse differs between 4 and 8 warps, chunk " << chunk;
  }
  set_selected_key_outer_mma(SelectedMma::Auto);
  set_selected_key_outer_warps(0);
  (void)attention_forward(in_.q, in_.k, in_.v, spec_);
  EXPECT_TRUE(last_selected_key_outer_wgmma()) << c.name << ": the default where wgmma runs";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectedKeyOuterWarps,
    ::testing::Values(
        // The paper's heads: 8 warps take 64 groups of 16 rows a unit, several
        // units a block (block 0 at S 2500), groups past a unit's last row.
        SelectedCase{"bf16_B2_S257_h16_d192_dv128_l64_n4_selected", 2, 257, 32, 2, 192, 128, 64, 4, at::kBFloat16, 1},
        SelectedCase{"bf16_S2500_h16_d192_dv128_l64_n16", 1, 2500, 32, 2, 192, 128, 64, 16, at::kBFloat16, 1},
        SelectedCase{"fp16_S700_h6_d128_dv64_l64_n5", 1, 700, 12, 2, 128, 64, 64, 5, at::kHalf, 0},
        SelectedCase{"bf16_B2_S333_h6_d64_l64_n4", 2, 333, 12, 2, 64, 64, 64, 4, at::kBFloat16, 0},
        SelectedCase{"fp16_S200_h1_d192_dv192_l64_n3", 1, 200, 2, 2, 192, 192, 64, 3, at::kHalf, 0}),
    [](const ::testing::TestParamInfo<SelectedCase>& info) { return std::string(info.param.name); });

// QueryColumns over more than 1024 blocks of 64 keys (S > 65,536): a CTA
// near the end walks its queries' union in two passes (query_tiles.cuh), and
// on sm_90 its tensor-copy walk has no barrier between tiles, only between
// passes (selected_columns.cu). The last 48 queries (three CTAs of 16 at h =
// 6) each choose blocks 0 and 1, three of the first pass near its end
// (1021-1023: five tiles, three of them issued by the last warp through an
// earlier one) and their own block 1024 of the second; their output against a
// float64 brute force over exactly those keys (the dense reference's [S, S]
// mask does not fit at this length). Every other query keeps a random draw.
TEST(SelectedAttention, ColumnsTwoUnionPassesMatchBruteForce) {
  NSA_REQUIRE_CUDA();
  const int64_t B = 1, S = 65536 + 48, H = 6, G = 1, d = 64, sel = 64, n = 6, last = 48;
  const auto in = testing::make_inputs(B, S, S, H, G, d, d, at::kBFloat16, 8100);
  const double scale = 1.0 / std::sqrt(double(d));
  at::Tensor block_idx = testing::random_block_idx(B, S, G, n, sel, 8101).cpu();
  const int64_t chosen[n] = {0, 1, 1021, 1022, 1023, 1024};
  for (int64_t t = S - last; t < S; ++t)
    for (int64_t j = 0; j < n; ++j) block_idx[0][t][0][j] = int(chosen[j]);
  block_idx = block_idx.to(in.q.device());
  const testing::SettingScope<SelectedTiling> tiling(selected_tiling, set_selected_tiling,
                                                     SelectedTiling::QueryColumns);
  BranchSpec spec;
  spec.branch = Branch::Selected, spec.block_idx = block_idx, spec.sel_block = sel, spec.scale = scale;
  const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
  ASSERT_TRUE(last_forward_used_query_columns()) << "QueryColumns did not run";
  // Keys of the chosen blocks up to each query (t >= 65,536: block 1024 is its own).
  const at::Tensor q = in.q.cpu().to(at::kDouble).narrow(1, S - last, last)[0];  // [last, H, d]
  const at::Tensor k = in.k.cpu().to(at::kDouble)[0], v = in.v.cpu().to(at::kDouble)[0];  // [S, G, d]
  at::Tensor ref = at::empty({last, H, d}, q.options());
  for (int64_t r = 0; r < last; ++r) {
    const int64_t t = S - last + r;
    std::vector<at::Tensor> ks, vs;
    for (const int64_t j : chosen) {
      const int64_t lo = j * sel, hi = std::min(t + 1, (j + 1) * sel);
      ks.push_back(k.narrow(0, lo, hi - lo).select(1, 0)), vs.push_back(v.narrow(0, lo, hi - lo).select(1, 0));
    }
    const at::Tensor kk = at::cat(ks), vv = at::cat(vs);              // [keys, d]
    const at::Tensor p = at::softmax(at::matmul(q[r], kk.t()) * scale, -1);  // [H, keys]
    ref[r] = at::matmul(p, vv);
  }
  testing::expect_close("two union passes, the last 48 queries",
                        f.o.narrow(1, S - last, last)[0], ref, testing::tolerance_for(at::kBFloat16));
}

TEST(SelectedAttention, AllSlotsUnusedGivesZeros) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(1, 17, 17, 4, 2, 16, 16, at::kBFloat16, 9);
  const at::Tensor block_idx = at::full({1, 17, 2, 3}, -1, in.q.options().dtype(at::kInt));
  const at::Tensor o = selected_attention(in.q, in.k, in.v, block_idx, 8, 0.25);
  EXPECT_TRUE(at::isfinite(o).all().item<bool>());
  EXPECT_EQ(o.abs().max().item<float>(), 0.f);
}

TEST(SelectedAttention, BackwardIsBitwiseReproducible) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(1, 130, 130, 8, 2, 64, 64, at::kBFloat16, 11);
  const at::Tensor block_idx = testing::random_block_idx(1, 130, 2, 4, 16, 5);
  BranchSpec spec;
  spec.branch = Branch::Selected, spec.block_idx = block_idx, spec.sel_block = 16, spec.scale = 0.125;
  const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
  const Gradients a = attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
  const Gradients b = attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
  EXPECT_TRUE(at::equal(a.dq, b.dq));
  EXPECT_TRUE(at::equal(a.dk, b.dk));
  EXPECT_TRUE(at::equal(a.dv, b.dv));
}

TEST(SelectedAttention, AllSlotsUnusedGivesZerosV2) {
  NSA_REQUIRE_CUDA();
  testing::ForceV1Scope force(false);
  const auto in = testing::make_inputs(1, 17, 17, 12, 2, 64, 64, at::kBFloat16, 19);
  BranchSpec spec;
  spec.branch = Branch::Selected, spec.sel_block = 16, spec.scale = 0.125;
  spec.block_idx = at::full({1, 17, 2, 4}, -1, in.q.options().dtype(at::kInt));
  set_poison_outputs(true);
  const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
  set_poison_outputs(false);
  EXPECT_EQ(last_forward_kernel_version(), 2);
  EXPECT_TRUE(at::isfinite(f.o).all().item<bool>());
  EXPECT_EQ(f.o.abs().max().item<float>(), 0.f);
  EXPECT_TRUE(at::isinf(f.lse).all().item<bool>() && (f.lse > 0).all().item<bool>()) << "lse must be +inf";
}

// The same inputs through v1 (forced) and v2 (forward, backward dq and dk/dv): both
// match the reference, and their logsumexps agree.
TEST(SelectedAttention, V1AndV2BothMatchReference) {
  NSA_REQUIRE_CUDA();
  struct Case {
    const char* name;
    int64_t B, S, H, G, dk, dv, sel_block, n;
    at::ScalarType dtype;
  };
  for (const Case& c :
       {Case{"bf16_m7c_like_S200_h6_d64_l64_n4", 1, 200, 12, 2, 64, 64, 64, 4, at::kBFloat16},
        Case{"fp16_paper_like_S130_h16_d192_dv128_l16_n5", 2, 130, 32, 2, 192, 128, 16, 5, at::kHalf}}) {
    const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, 5000 + c.S);
    const double scale = 1.0 / std::sqrt(double(c.dk));
    const at::Tensor block_idx = testing::random_block_idx(c.B, c.S, c.G, c.n, c.sel_block, 99 + c.S);
    BranchSpec spec;
    spec.branch = Branch::Selected, spec.sel_block = c.sel_block, spec.block_idx = block_idx, spec.scale = scale;
    const at::Tensor ref = ref_selected_attention(in.q.cpu().to(at::kDouble), in.k.cpu().to(at::kDouble),
                                                  in.v.cpu().to(at::kDouble), block_idx.cpu(), c.sel_block, scale);
    testing::check_v1_and_v2(c.name, in, spec, ref);
    testing::check_branch_v1_and_v2(c.name, in, kernel(block_idx, c.sel_block, scale),
                                    reference(block_idx, c.sel_block, scale));
  }
}

// BackwardDq::atomic and ::slots: dq made by the dk/dv kernel (testing::check_dq_in_dkdv).
// Where the atomic path does not apply (sel_block not a multiple of 64; 128/128,
// whose tiles leave no room for dS^T) the dq kernel runs and the function is the same.
struct AtomicDqCase {
  const char* name;
  int64_t B, S, H, G, dk, dv, sel_block, n;
  at::ScalarType dtype;
  int source;  // 0: random draw, 1: select_blocks on q / block means of k, 2: block 0 only
  bool applies;
};
void PrintTo(const AtomicDqCase& c, std::ostream* os) { *os << c.name; }

class SelectedAtomicDq : public SelectedProblem<AtomicDqCase> {
 protected:
  void SetUp() override {
    NSA_REQUIRE_CUDA();
    make(7000, 55, 16, 8);
  }
  testing::AttnFn atomic() const { return kernel(block_idx_, GetParam().sel_block, scale_, BackwardDq::atomic); }
  testing::AttnFn ref() const { return reference(block_idx_, GetParam().sel_block, scale_); }

  testing::ForceV1Scope force_{false};  // the v2 kernels, whatever the environment asks
};

TEST_P(SelectedAtomicDq, MatchesReference) {
  const AtomicDqCase& c = GetParam();
  testing::check_dq_in_dkdv(c.name, in_, spec_, atomic(), ref(), c.applies);
}

// BackwardDq::slots: the dk/dv kernel's per-(query, block) partials, merged in
// slot order (bitwise reproducible: check_dq_in_dkdv runs it twice and over 3
// row splits). Applies where atomic does with one 64-key tile a block; with
// two (sel_block 128) the dq kernel runs.
TEST_P(SelectedAtomicDq, SlotsMatchReference) {
  const AtomicDqCase& c = GetParam();
  testing::check_dq_in_dkdv(c.name, in_, spec_, kernel(block_idx_, c.sel_block, scale_, BackwardDq::slots), ref(),
                            c.applies && c.sel_block == 64, BackwardDq::slots);
}

// The selected dk/dv kernel with dq on Hopper's warpgroup MMAs
// (SelectedMma::Wgmma): gradients against the float64 reference, in one row
// split and in 3; dk, dv and dq within rounding of the mma.sync kernel's; the
// default takes it where selected_dkdv_wgmma_by_default says. Where the atomic
// path does not apply neither kernel runs.
// Skipped where wgmma cannot run (wgmma_declines()).
TEST_P(SelectedAtomicDq, WgmmaMatchesReference) {
  if (const std::string why = wgmma_declines(); !why.empty()) GTEST_SKIP() << why;
  const AtomicDqCase& c = GetParam();
  {
    testing::SettingScope<SelectedMma> mma(selected_dkdv_mma, set_selected_dkdv_mma, SelectedMma::Wgmma);
    testing::check_branch(std::string(c.name) + " (dq atomic, wgmma)", in_, atomic(), ref());
    EXPECT_EQ(last_selected_dkdv_wgmma(), c.applies) << c.name;
    testing::SettingScope<int> splits(dkdv_row_splits_forced, set_dkdv_row_splits, 3);
    testing::check_branch(std::string(c.name) + " (dq atomic, wgmma, 3 row splits)", in_, atomic(), ref());
  }
  BranchSpec spec = spec_;
  spec.dq = BackwardDq::atomic;
  const ForwardResult f = attention_forward(in_.q, in_.k, in_.v, spec);
  Gradients g[2];
  for (int i = 0; i < 2; ++i) {
    testing::SettingScope<SelectedMma> mma(selected_dkdv_mma, set_selected_dkdv_mma,
                                           i == 0 ? SelectedMma::MmaSync : SelectedMma::Auto);
    g[i] = attention_backward(in_.q, in_.k, in_.v, f.o, f.lse, in_.dout, spec);
    EXPECT_EQ(last_selected_dkdv_wgmma(),
              i == 1 && c.applies && selected_dkdv_wgmma_by_default(int(c.dk), int(c.dv)))
        << c.name << (i ? ": the default" : ": mma.sync");
  }
  const double tol = testing::tolerance_for(c.dtype);
  testing::expect_close(std::string(c.name) + " dk wgmma vs mma.sync", g[1].dk, testing::f64(g[0].dk), tol);
  testing::expect_close(std::string(c.name) + " dv wgmma vs mma.sync", g[1].dv, testing::f64(g[0].dv), tol);
  testing::expect_close(std::string(c.name) + " dq wgmma vs mma.sync", g[1].dq, testing::f64(g[0].dq), tol);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectedAtomicDq,
    ::testing::Values(
        AtomicDqCase{"bf16_B2_S333_h6_d64_l64_n4", 2, 333, 12, 2, 64, 64, 64, 4, at::kBFloat16, 0, true},
        AtomicDqCase{"fp16_S150_h6_d64_l64_n3_selected", 1, 150, 6, 1, 64, 64, 64, 3, at::kHalf, 1, true},
        AtomicDqCase{"bf16_S1000_h6_d64_l64_n16_selected", 1, 1000, 12, 2, 64, 64, 64, 16, at::kBFloat16, 1, true},
        // The work list's extremes: one key tile's rows over many items, the
        // other key tiles no item (their dk, dv the zeroed accumulator's).
        AtomicDqCase{"bf16_S1000_h6_d64_l64_n2_block0_alone", 1, 1000, 12, 2, 64, 64, 64, 2, at::kBFloat16, 2, true},
        AtomicDqCase{"bf16_S64_h16_d192_dv128_l64_n16", 1, 64, 16, 1, 192, 128, 64, 16, at::kBFloat16, 0, true},
        AtomicDqCase{"bf16_B2_S257_h16_d192_dv128_l64_n4", 2, 257, 32, 2, 192, 128, 64, 4, at::kBFloat16, 1, true},
        AtomicDqCase{"fp16_S300_h2_d64_l128_n2_two_key_tiles", 1, 300, 4, 2, 64, 64, 128, 2, at::kHalf, 0, true},
        AtomicDqCase{"fp16_S300_h2_d128_l128_n2_no_room", 1, 300, 4, 2, 128, 128, 128, 2, at::kHalf, 0, false},
        AtomicDqCase{"bf16_S130_h4_d64_l16_n4_small_blocks", 1, 130, 8, 2, 64, 64, 16, 4, at::kBFloat16, 0, false}),
    [](const ::testing::TestParamInfo<AtomicDqCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nsa::cuda
