// The CTA start order (nsa_cuda.h, set_cta_order) changes which CTA takes which
// tile, never what a tile computes: forward and backward of every branch, v1
// and v2, with the key tiles' rows split or not, give the same bits in
// heavy-first and in blockIdx order, and select_blocks chooses the same blocks.
// (That the default order computes the right function is every other kernel
// test's job: they run in it.)
#include <cmath>
#include <string>
#include <tuple>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

struct BranchRun {
  ForwardResult f;
  Gradients g;
};

BranchRun run_branch(const testing::AttnInputs& in, const BranchSpec& spec, CtaOrder order) {
  const CtaOrder prev = cta_order();
  set_cta_order(order);
  BranchRun r;
  r.f = attention_forward(in.q, in.k, in.v, spec);
  r.g = attention_backward(in.q, in.k, in.v, r.f.o, r.f.lse, in.dout, spec);
  set_cta_order(prev);
  return r;
}

struct OrderCase {
  const char* name;
  Branch branch;
  int64_t B, S, H, G, dk, dv, sel_block;
  at::ScalarType dtype;  // fp32 runs v1
};
void PrintTo(const OrderCase& c, std::ostream* os) { *os << c.name; }

class CtaOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(CtaOrderTest, SameBitsInEitherOrder) {
  NSA_REQUIRE_CUDA();
  const OrderCase& c = GetParam();
  const int64_t cmp_block = 32, cmp_stride = 16;
  const int64_t Sk = c.branch == Branch::Compressed ? (c.S - cmp_block) / cmp_stride + 1 : c.S;
  const auto in = testing::make_inputs(c.B, c.S, Sk, c.H, c.G, c.dk, c.dv, c.dtype, 4100 + c.S);
  BranchSpec spec;
  spec.branch = c.branch, spec.scale = 1.0 / std::sqrt(double(c.dk));
  spec.window = 96, spec.cmp_block = cmp_block, spec.cmp_stride = cmp_stride, spec.sel_block = c.sel_block;
  if (c.branch == Branch::Selected) spec.block_idx = testing::random_block_idx(c.B, c.S, c.G, 6, c.sel_block, 31);
  const int prev_splits = dkdv_row_splits_forced();
  for (int splits : {0, 3}) {  // automatic, and each key tile's rows over 3 CTAs (v2)
    set_dkdv_row_splits(splits);
    const BranchRun heavy = run_branch(in, spec, CtaOrder::HeavyFirst), grid = run_branch(in, spec, CtaOrder::Grid);
    const std::string what = std::string(c.name) + (splits ? "/3_splits" : "/auto_splits");
    EXPECT_TRUE(at::equal(heavy.f.o, grid.f.o)) << what << ": o";
    EXPECT_TRUE(at::equal(heavy.f.lse, grid.f.lse)) << what << ": lse";
    EXPECT_TRUE(at::equal(heavy.g.dq, grid.g.dq)) << what << ": dq";
    EXPECT_TRUE(at::equal(heavy.g.dk, grid.g.dk)) << what << ": dk";
    EXPECT_TRUE(at::equal(heavy.g.dv, grid.g.dv)) << what << ": dv";
    // Not all zeros: a grid whose CTAs all skipped their tiles would pass the
    // comparison above.
    EXPECT_GT(heavy.g.dk.abs().max().item<float>(), 0.f) << what;
    EXPECT_GT(heavy.f.o.abs().max().item<float>(), 0.f) << what;
  }
  set_dkdv_row_splits(prev_splits);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CtaOrderTest,
    ::testing::Values(
        // m7c's heads per group, several query tiles and key tiles, odd S.
        OrderCase{"window_bf16_B2_S333_h6", Branch::Window, 2, 333, 12, 2, 64, 64, 0, at::kBFloat16},
        OrderCase{"compressed_bf16_B2_S700_h6", Branch::Compressed, 2, 700, 12, 2, 64, 64, 0, at::kBFloat16},
        OrderCase{"selected_bf16_B2_S333_h6_l64", Branch::Selected, 2, 333, 12, 2, 64, 64, 64, at::kBFloat16},
        // Two key tiles a selected block; head chunks of 16 (h = 40) in the query grid.
        OrderCase{"selected_fp16_S300_h2_l128", Branch::Selected, 1, 300, 4, 2, 128, 128, 128, at::kHalf},
        OrderCase{"window_bf16_S130_h40_chunks", Branch::Window, 1, 130, 40, 1, 128, 64, 0, at::kBFloat16},
        // v1 (fp32).
        OrderCase{"selected_fp32_v1_S150_l16", Branch::Selected, 2, 150, 4, 2, 32, 16, 16, at::kFloat},
        OrderCase{"compressed_fp32_v1_S200", Branch::Compressed, 1, 200, 4, 1, 16, 32, 0, at::kFloat}),
    [](const ::testing::TestParamInfo<OrderCase>& info) { return std::string(info.param.name); });

// select_blocks (v2) chooses the same blocks in either order, with the
// compressed forward's logsumexp and without it (its own first pass), at m7c's
// 6 heads a group and at 16 (the per-key column sums).
TEST(CtaOrder, SelectBlocksChoosesTheSameBlocksInEitherOrder) {
  NSA_REQUIRE_CUDA();
  const int64_t l = 32, d = 16, sel_block = 64, n = 8;
  for (const auto& [H, G, dk] : {std::tuple<int64_t, int64_t, int64_t>{12, 2, 64}, {16, 1, 192}}) {
    const auto in = testing::make_inputs(2, 900, 900, H, G, dk, dk, at::kBFloat16, 4300 + H);
    const at::Tensor kc = in.k.unfold(1, l, d).mean(-1).contiguous();  // [B, n_cmp, G, dk]
    const double scale = 1.0 / std::sqrt(double(dk));
    BranchSpec spec;
    spec.branch = Branch::Compressed, spec.cmp_block = l, spec.cmp_stride = d, spec.scale = scale;
    const at::Tensor lse = attention_forward(in.q, kc, kc, spec).lse;
    const CtaOrder prev = cta_order();
    for (const at::Tensor& given : {at::Tensor(), lse}) {
      set_cta_order(CtaOrder::HeavyFirst);
      const at::Tensor heavy = select_blocks(in.q, kc, l, d, sel_block, n, scale, given);
      set_cta_order(CtaOrder::Grid);
      const at::Tensor grid = select_blocks(in.q, kc, l, d, sel_block, n, scale, given);
      set_cta_order(prev);
      const std::string what = "H " + std::to_string(H) + (given.defined() ? ", lse given" : ", own lse");
      EXPECT_TRUE(at::equal(heavy, grid)) << what;
      EXPECT_GT(heavy.max().item<int>(), 0) << what;  // choices past the forced block 0
    }
  }
}

}  // namespace
}  // namespace nsa::cuda
