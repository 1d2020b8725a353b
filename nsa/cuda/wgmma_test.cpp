// The v3 forward's Hopper warpgroup MMAs (wgmma.cuh): the two warpgroup tiles
// against float64 products, then the forward of every branch at dk = dv = 64
// with wgmma on and off, each against the float64 reference of the branch.
// Skips where wgmma_declines() says why (no sm_90a code, not a Hopper GPU).
#include <cmath>
#include <string>

#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"
#include "nsa/cuda/wgmma_check.h"

namespace nsa::cuda {
namespace {

#define NSA_REQUIRE_WGMMA()                                                \
  do {                                                                     \
    NSA_REQUIRE_CUDA();                                                    \
    if (const std::string why = wgmma_declines(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// Switches the v3 forward for a scope, restoring the previous setting.
struct WgmmaScope : testing::SettingScope<bool> {
  explicit WgmmaScope(bool on) : SettingScope(forward_wgmma, set_forward_wgmma, on) {}
};

// S = A B^T takes B as K-major core matrices, O = P V as MN-major ones: a wrong
// descriptor offset, a swapped LBO/SBO or a fragment laid out unlike mma.sync's
// shows as a large error on random inputs. The oracle is ATen's float64 matmul
// of the same 16-bit values: S sums exact products in fp32 (error ~1e-7
// relative), O takes S rounded to the dtype as the kernel rounds P.
TEST(Wgmma, WarpgroupTilesMatchFloat64Products) {
  NSA_REQUIRE_WGMMA();
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    at::manual_seed(31);
    const at::Tensor a = at::randn({64, 64}, opts), bk = at::randn({64, 64}, opts), bv = at::randn({64, 64}, opts);
    const auto [s, o] = testing::wgmma_tiles(a, bk, bv);
    const at::Tensor s_ref = at::matmul(testing::f64(a), testing::f64(bk).t());
    testing::expect_close("S = A K^T", s, s_ref, 1e-5);
    const at::Tensor p = testing::f64(s.to(dtype));
    testing::expect_close("O = P V", o, at::matmul(p, testing::f64(bv)), 1e-5);
  }
}

struct Case {
  const char* name;
  Branch branch;
  int64_t B, S, H, G;
  int64_t window, cmp_block, cmp_stride, sel_block, n;
  at::ScalarType dtype;
};

// Window and Compressed walk a contiguous key range (partly visible tiles at
// both ends), Selected the union of its queries' blocks (one-block tiles with
// sel_block 64, several blocks per tile below it, two union passes with
// one-key blocks, a selection from select_blocks); h = 1, 6 (rows straddle
// queries inside a warp) and 16; B = 2; fp16 and bf16.
const Case kCases[] = {
    {"window_bf16_S333_h6_w100", Branch::Window, 1, 333, 12, 2, 100, 0, 0, 0, 0, at::kBFloat16},
    {"window_fp16_B2_S130_h1_w1", Branch::Window, 2, 130, 2, 2, 1, 0, 0, 0, 0, at::kHalf},
    {"window_bf16_S97_h16_w_past_S", Branch::Window, 1, 97, 16, 1, 500, 0, 0, 0, 0, at::kBFloat16},
    {"compressed_bf16_S333_h6_l32_d16", Branch::Compressed, 1, 333, 12, 2, 0, 32, 16, 0, 0, at::kBFloat16},
    {"compressed_fp16_B2_S200_h16_l8_d4", Branch::Compressed, 2, 200, 16, 1, 0, 8, 4, 0, 0, at::kHalf},
    {"selected_bf16_B2_S333_h6_l64_n4", Branch::Selected, 2, 333, 12, 2, 0, 0, 0, 64, 4, at::kBFloat16},
    {"selected_fp16_S257_h6_l16_n16", Branch::Selected, 1, 257, 12, 2, 0, 0, 0, 16, 16, at::kHalf},
    {"selected_bf16_S1100_h1_l1_n8_two_passes", Branch::Selected, 1, 1100, 2, 2, 0, 0, 0, 1, 8, at::kBFloat16},
    {"selected_bf16_S2048_h6_l64_n16_train_like", Branch::Selected, 1, 2048, 6, 1, 0, 0, 0, 64, 16, at::kBFloat16},
};

TEST(Wgmma, ForwardOfEveryBranchMatchesTheReferenceOnAndOff) {
  NSA_REQUIRE_WGMMA();
  testing::ForceV1Scope v2(false);
  // wgmma serves Selected's SharedRows tiling, which long rows of small blocks
  // would not pick on their own.
  testing::SettingScope<SelectedTiling> tiling(selected_tiling, set_selected_tiling, SelectedTiling::SharedRows);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, 64, 64, c.dtype, 7000 + c.S);
    BranchSpec spec;
    spec.branch = c.branch, spec.scale = 0.125;
    at::Tensor k = in.k, v = in.v, ref;
    const at::Tensor q64 = testing::f64(in.q);
    if (c.branch == Branch::Window) {
      spec.window = c.window;
      ref = ref_window_attention(q64, testing::f64(k), testing::f64(v), c.window, spec.scale);
    } else if (c.branch == Branch::Compressed) {
      // Compressed keys: S_cmp = (S - l) / d + 1 rows of the random keys.
      const int64_t S_cmp = (c.S - c.cmp_block) / c.cmp_stride + 1;
      k = in.k.narrow(1, 0, S_cmp).contiguous(), v = in.v.narrow(1, 0, S_cmp).contiguous();
      spec.cmp_block = c.cmp_block, spec.cmp_stride = c.cmp_stride;
      ref = ref_compressed_attention(q64, testing::f64(k), testing::f64(v), c.cmp_block, c.cmp_stride, spec.scale);
    } else {
      spec.sel_block = c.sel_block;
      spec.block_idx = testing::random_block_idx(c.B, c.S, c.G, c.n, c.sel_block, 300 + c.S);
      ref = ref_selected_attention(q64, testing::f64(k), testing::f64(v), spec.block_idx.cpu(), c.sel_block,
                                   spec.scale);
    }
    ForwardResult r[2];
    for (bool on : {false, true}) {
      WgmmaScope wgmma(on);
      testing::PoisonScope poison;
      r[on] = attention_forward(in.q, k, v, spec);
      EXPECT_EQ(last_forward_used_wgmma(), on) << "the forward did not run the MMAs asked for";
      testing::expect_close(std::string(c.name) + (on ? " wgmma o" : " mma.sync o"), r[on].o, ref,
                            testing::tolerance_for(c.dtype));
    }
    // The two forms sum the same fp32 products in another order: their
    // logsumexps agree to fp32's tolerance, +inf (no visible key) in the same rows.
    const at::Tensor inf0 = at::isinf(r[0].lse), inf1 = at::isinf(r[1].lse);
    EXPECT_TRUE(at::equal(inf0, inf1)) << "wgmma and mma.sync disagree on which rows saw no key";
    const at::Tensor zero = at::zeros({}, r[0].lse.options());
    testing::expect_close(std::string(c.name) + " lse wgmma vs mma.sync", at::where(inf1, zero, r[1].lse),
                          at::where(inf0, zero, r[0].lse), testing::tolerance_for(at::kFloat));
  }
}

// Head dims other than 64 / 64, and Selected under SplitKeys, keep mma.sync.
TEST(Wgmma, OtherShapesKeepMmaSync) {
  NSA_REQUIRE_WGMMA();
  testing::ForceV1Scope v2(false);
  WgmmaScope wgmma(true);
  const auto in = testing::make_inputs(1, 100, 100, 4, 2, 128, 128, at::kBFloat16, 3);
  BranchSpec spec;
  spec.branch = Branch::Window, spec.window = 16, spec.scale = 0.1;
  attention_forward(in.q, in.k, in.v, spec);
  EXPECT_EQ(last_forward_kernel_version(), 2);
  EXPECT_FALSE(last_forward_used_wgmma());
  const auto in64 = testing::make_inputs(1, 100, 100, 4, 2, 64, 64, at::kBFloat16, 4);
  spec.branch = Branch::Selected, spec.sel_block = 16;
  spec.block_idx = testing::random_block_idx(1, 100, 2, 3, 16, 5);
  const SelectedTiling prev = selected_tiling();
  set_selected_tiling(SelectedTiling::SplitKeys);
  attention_forward(in64.q, in64.k, in64.v, spec);
  EXPECT_FALSE(last_forward_used_wgmma());
  set_selected_tiling(SelectedTiling::SharedRows);
  attention_forward(in64.q, in64.k, in64.v, spec);
  EXPECT_TRUE(last_forward_used_wgmma());
  set_selected_tiling(prev);
}

// Off (the default) keeps every forward on mma.sync.
TEST(Wgmma, OffByDefault) {
  NSA_REQUIRE_WGMMA();
  testing::ForceV1Scope v2(false);
  EXPECT_FALSE(forward_wgmma());
  const auto in = testing::make_inputs(1, 100, 100, 4, 2, 64, 64, at::kBFloat16, 6);
  BranchSpec spec;
  spec.branch = Branch::Selected, spec.sel_block = 16, spec.scale = 0.125;
  spec.block_idx = testing::random_block_idx(1, 100, 2, 4, 16, 7);
  attention_forward(in.q, in.k, in.v, spec);
  EXPECT_EQ(last_forward_kernel_version(), 2);
  EXPECT_FALSE(last_forward_used_wgmma());
}

}  // namespace
}  // namespace nsa::cuda
