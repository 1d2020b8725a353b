// window_attention vs ref_window_attention (float64): output and every gradient.
#include <cmath>

#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

struct WindowCase {
  const char* name;
  int64_t B, S, H, G, dk, dv, window;
  at::ScalarType dtype;
};
void PrintTo(const WindowCase& c, std::ostream* os) { *os << c.name; }

class WindowAttention : public ::testing::TestWithParam<WindowCase> {};

TEST_P(WindowAttention, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const WindowCase& c = GetParam();
  const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, /*seed=*/1000 + c.S);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  testing::check_branch(
      c.name, in,
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        return window_attention(q, k, v, c.window, scale);
      },
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        return ref_window_attention(q, k, v, c.window, scale);
      });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WindowAttention,
    ::testing::Values(
        WindowCase{"bf16_S107_w32_d64", 1, 107, 4, 2, 64, 64, 32, at::kBFloat16},
        WindowCase{"fp16_B2_S130_w64_d128", 2, 130, 8, 2, 128, 128, 64, at::kHalf},
        WindowCase{"fp32_S64_w_longer_than_S_d16_dv32", 1, 64, 4, 1, 16, 32, 1000, at::kFloat},
        WindowCase{"fp32_B2_S77_w1_self_only_d32", 2, 77, 6, 2, 32, 32, 1, at::kFloat},
        WindowCase{"bf16_paper_heads_S96_d192_dv128", 1, 96, 16, 4, 192, 128, 40, at::kBFloat16},
        WindowCase{"bf16_S70_d256", 1, 70, 2, 1, 256, 256, 33, at::kBFloat16},
        WindowCase{"fp32_S50_h12_per_group_d48", 1, 50, 12, 1, 48, 16, 17, at::kFloat},
        WindowCase{"fp32_window0_empty_rows", 1, 20, 2, 1, 16, 16, 0, at::kFloat}),
    [](const ::testing::TestParamInfo<WindowCase>& info) { return std::string(info.param.name); });

TEST(WindowAttention, EmptyWindowGivesZerosNotNaN) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(1, 9, 9, 2, 1, 16, 16, at::kBFloat16, 7);
  const at::Tensor o = window_attention(in.q, in.k, in.v, /*window=*/0, 0.25);
  EXPECT_TRUE(at::isfinite(o).all().item<bool>());
  EXPECT_EQ(o.abs().max().item<float>(), 0.f);
}

TEST(WindowAttention, RejectsBadInputsWithContext) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(1, 8, 8, 4, 2, 24, 16, at::kFloat, 3);  // dk=24: not a multiple of 16
  try {
    window_attention(in.q, in.k, in.v, 4, 0.2);
    FAIL() << "dk=24 accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nsa::cuda
