// The layer's CUDA path against the per-query reference, and every weight
// getting its gradient through the kernels' autograd functions.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/row_delta.h"
#include "nsa/determinism.h"
#include "nsa/flags.h"
#include "nsa/model.h"
#include "nsa/test_support.h"

namespace nsa::cuda {
namespace {
using namespace nsa::testing;

// The layer's NSA_SELECTED_TILING: each value the flag registry allows names
// its own tiling (the registry's list and the parser are two tables; a choice
// one has and the other lacks would either be refused by the flag check or
// throw inside the layer), and a value outside them throws naming the flag.
TEST(SelectedTilingFlag, EveryAllowedValueNamesItsOwnTiling) {
  const FlagInfo* f = find_flag("NSA_SELECTED_TILING");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->default_value, "auto");
  std::set<int> seen;
  for (std::string_view value : f->allowed) seen.insert(int(parse_selected_tiling(value)));
  EXPECT_EQ(seen.size(), f->allowed.size());
  EXPECT_EQ(seen.size(), 5u);  // Auto, SharedRows, SplitKeys, QueryColumns, KeyOuter
  EXPECT_EQ(parse_selected_tiling("auto"), SelectedTiling::Auto);
  EXPECT_EQ(parse_selected_tiling("key_outer"), SelectedTiling::KeyOuter);
  try {
    parse_selected_tiling("keyouter");
    ADD_FAILURE() << "a value outside the choices was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("NSA_SELECTED_TILING"), std::string::npos) << e.what();
  }
}

TEST(CudaLayerPath, MatchesTheReferenceAndTrainsEveryWeight) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  register_with_layer();
  for (int64_t S : {5, 107, 130}) {
    SCOPED_TRACE("S=" + std::to_string(S));
    auto lc = make_case(tiny(), 2, S, at::kDouble, fresh_seed());
    auto rt = runtime_with();
    BranchOutputs ref, got;
    auto y_ref = nsa_attention(lc.w, lc.x, lc.cfg, rt, 0, Path::reference, &ref);
    auto w = lc.w.to(at::kCUDA, at::kFloat, /*requires_grad=*/true);
    auto x = lc.x.to(at::kCUDA, at::kFloat);
    auto y = nsa_attention(w, x, lc.cfg, rt, 0, Path::cuda, &got);
    for (int b = 0; b < 3; ++b) EXPECT_LE(rel_max_err(got.o[b].cpu(), ref.o[b]), 1e-4) << nsa::branch_name(nsa::Branch(b));
    double mismatch = (got.block_idx.cpu() != ref.block_idx).to(at::kFloat).mean().item<double>();
    EXPECT_LE(mismatch, 0.01) << "selected blocks differ beyond fp32 near-ties";
    EXPECT_LE(rel_max_err(y.cpu(), y_ref), 1e-4);
    const int64_t taken = row_deltas_taken();
    y.pow(2).sum().backward();
    // Each branch's backward took the delta the gate combine's backward made
    // beside its gradient (row_delta.h; with S < l the compressed branch has
    // no key and its backward launches nothing).
    if (S >= lc.cfg.nsa.cmp_block) EXPECT_EQ(row_deltas_taken() - taken, 3);
    for (auto& [name, t] : w.named()) {
      // With S < l no compressed block exists: the compression weights rightly get nothing.
      bool cmp_side = name.find("cmp") != std::string::npos || name.rfind("phi", 0) == 0;
      if (S < lc.cfg.nsa.cmp_block && cmp_side) continue;
      ASSERT_TRUE(t.grad().defined()) << name;
      EXPECT_GT(t.grad().abs().max().item<double>(), 0.0) << name;
    }
  }
}

// NSA_SELECTED_DQ's choices (nsa/flags.cpp) are `auto` and the BackwardDq
// values the layer passes, no more and no fewer; `auto` resolves to slots
// (reproducible) or atomics (fast) (nsa/determinism.h); any other text is
// refused naming the flag. Runs without a device.
TEST(CudaLayerPath, BackwardDqFlagValuesNameTheChoices) {
  const FlagInfo* flag = find_flag("NSA_SELECTED_DQ");
  ASSERT_NE(flag, nullptr);
  const std::vector<std::pair<std::string_view, BackwardDq>> expected = {{"kernel", BackwardDq::kernel},
                                                                         {"atomic", BackwardDq::atomic},
                                                                         {"slots", BackwardDq::slots}};
  ASSERT_EQ(flag->allowed.size(), expected.size() + 1);
  EXPECT_EQ(flag->allowed[0], "auto");
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(flag->allowed[i + 1], expected[i].first);
    EXPECT_EQ(parse_backward_dq(expected[i].first), expected[i].second) << expected[i].first;
  }
  const BackwardChoice& row = kBackwardChoices[1];
  ASSERT_EQ(row.flag, "NSA_SELECTED_DQ");
  EXPECT_EQ(parse_backward_dq(row.reproducible), BackwardDq::slots);
  EXPECT_EQ(parse_backward_dq(row.fast), BackwardDq::atomic);
  try {
    parse_backward_dq("atomics");
    ADD_FAILURE() << "accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("NSA_SELECTED_DQ: expected kernel, atomic or slots"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

// NSA_COMPRESSED_DQ's choices are `auto` and the two BackwardDq values our
// compressed kernels take (no slots: a query sees every compressed key, so
// there is no block to give a slot); `auto` resolves to the dq kernel
// (reproducible) or atomics (fast). Runs without a device.
TEST(CudaLayerPath, CompressedDqFlagValuesNameTheChoices) {
  const FlagInfo* flag = find_flag("NSA_COMPRESSED_DQ");
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->allowed, (std::vector<std::string_view>{"auto", "kernel", "atomic"}));
  EXPECT_EQ(parse_backward_dq("kernel"), BackwardDq::kernel);
  EXPECT_EQ(parse_backward_dq("atomic"), BackwardDq::atomic);
  const BackwardChoice& row = backward_choice_row("NSA_COMPRESSED_DQ");
  EXPECT_EQ(parse_backward_dq(row.reproducible), BackwardDq::kernel);
  EXPECT_EQ(parse_backward_dq(row.fast), BackwardDq::atomic);
}

// The model's RMSNorm on a GPU (ATen's fused kernel) against the formula in
// float64, value and both gradients, for the dtypes training uses.
TEST(CudaModelOps, RmsNormMatchesFloat64Formula) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  at::manual_seed(fresh_seed());
  const double eps = 1e-5;
  for (auto dt : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(std::string("dtype ") + c10::toString(dt));
    auto x64 = at::randn({3, 37, 96}, at::kDouble) * 3.0;
    auto w64 = at::rand({96}, at::kDouble) + 0.5;
    auto g64 = at::randn({3, 37, 96}, at::kDouble);
    // Oracle: y = x / sqrt(mean(x²) + eps) · w, from the inputs as the GPU sees them.
    auto xr = x64.to(dt).to(at::kDouble).requires_grad_();
    auto wr = w64.to(at::kFloat).to(at::kDouble).requires_grad_();
    auto y_ref = xr / at::sqrt((xr * xr).mean(-1, true) + eps) * wr;
    y_ref.backward(g64);
    auto x = x64.to(at::kCUDA, dt).requires_grad_();
    auto w = w64.to(at::kCUDA, at::kFloat).requires_grad_();  // fp32 master weight, as the model keeps it
    auto y = rms_norm(x, w, eps);
    ASSERT_EQ(y.scalar_type(), dt);
    y.backward(g64.to(at::kCUDA, dt));
    // bf16: one rounding of the output (2^-8) and of the weight the kernel multiplies by.
    const double tol = dt == at::kFloat ? 1e-5 : 1.6e-2;
    EXPECT_LE(rel_max_err(y.cpu().to(at::kDouble), y_ref.detach()), tol);
    EXPECT_LE(rel_max_err(x.grad().cpu().to(at::kDouble), xr.grad()), dt == at::kFloat ? 1e-5 : 3e-2);
    EXPECT_LE(rel_max_err(w.grad().cpu().to(at::kDouble), wr.grad()), dt == at::kFloat ? 1e-5 : 3e-2);
  }
}

}  // namespace
}  // namespace nsa::cuda
