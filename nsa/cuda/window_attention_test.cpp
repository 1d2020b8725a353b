// window_attention vs ref_window_attention (float64): output and every gradient.
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <vector>

#include <ATen/cuda/CUDAGraph.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/autograd.h>

#include "nsa/cuda/branch_reference.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"
#include "nsa/cuda/window_cudnn.h"
#include "nsa/cuda/window_flash.h"
#include "nsa/determinism.h"
#include "nsa/flags.h"

namespace nsa::cuda {
namespace {

struct WindowCase {
  const char* name;
  int64_t B, S, H, G, dk, dv, window;
  at::ScalarType dtype;
};
void PrintTo(const WindowCase& c, std::ostream* os) { *os << c.name; }

using WindowFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, double)>;

// `fn` (our kernel, FlashAttention-2, cuDNN) on the case's random inputs against
// ref_window_attention in float64: output and every gradient.
void check_window(const WindowCase& c, const testing::AttnInputs& in, const std::string& label, const WindowFn& fn) {
  const double scale = 1.0 / std::sqrt(double(c.dk));
  testing::check_branch(
      label, in,
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) { return fn(q, k, v, c.window, scale); },
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        return ref_window_attention(q, k, v, c.window, scale);
      });
}

std::string case_name(const ::testing::TestParamInfo<WindowCase>& info) { return info.param.name; }

// The band edges every library's window (FA2, cuDNN) is checked on, and the
// library's own extras: window 1 (itself only), longer than / equal to the
// sequence (plain causal), S off the tiles, 6 and 16 heads per group, batch 2,
// d = 64 / 128.
std::vector<WindowCase> band_edges(std::initializer_list<WindowCase> extra) {
  std::vector<WindowCase> cases = {
      WindowCase{"bf16_m7c_like_S300_h6_d64_w64", 2, 300, 12, 2, 64, 64, 64, at::kBFloat16},
      WindowCase{"fp16_S129_h16_d128_w100", 1, 129, 16, 1, 128, 128, 100, at::kHalf},
      WindowCase{"bf16_S77_w1_self_only", 1, 77, 4, 2, 64, 64, 1, at::kBFloat16},
      WindowCase{"bf16_S70_w_longer_than_S", 1, 70, 6, 1, 64, 64, 512, at::kBFloat16},
      WindowCase{"bf16_S70_w_equal_S", 1, 70, 6, 1, 64, 64, 70, at::kBFloat16}};
  cases.insert(cases.end(), extra);
  return cases;
}

class WindowAttention : public ::testing::TestWithParam<WindowCase> {};

TEST_P(WindowAttention, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const WindowCase& c = GetParam();
  check_window(c, testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, /*seed=*/1000 + c.S), c.name,
               [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t w, double s) {
                 return window_attention(q, k, v, w, s);
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
        WindowCase{"fp32_window0_empty_rows", 1, 20, 2, 1, 16, 16, 0, at::kFloat},
        // Tensor-core (v2) tile boundaries: S around the 64-row / 64-key tiles, h = 1,
        // 6 (10 queries + 4 padding rows per CTA), 16, 80 (head chunks of 64), dk != dv.
        WindowCase{"bf16_S1_h1_d64", 1, 1, 1, 1, 64, 64, 512, at::kBFloat16},
        WindowCase{"fp16_S63_h6_d64_w16", 1, 63, 12, 2, 64, 64, 16, at::kHalf},
        WindowCase{"bf16_S64_h16_d192_dv128_w40", 1, 64, 16, 1, 192, 128, 40, at::kBFloat16},
        WindowCase{"bf16_S65_h1_d128_w64", 1, 65, 2, 2, 128, 128, 64, at::kBFloat16},
        WindowCase{"fp16_S129_h6_d64_dv192_w100", 1, 129, 6, 1, 64, 192, 100, at::kHalf},
        WindowCase{"bf16_B2_S257_h16_d192_dv128_w130", 2, 257, 32, 2, 192, 128, 130, at::kBFloat16},
        WindowCase{"bf16_S257_h1_d128_dv64_w512", 1, 257, 3, 3, 128, 64, 512, at::kBFloat16},
        WindowCase{"bf16_S129_h6_d192_dv192_w1", 1, 129, 6, 1, 192, 192, 1, at::kBFloat16},
        WindowCase{"fp16_S33_h80_head_chunks_d64", 1, 33, 80, 1, 64, 64, 20, at::kHalf},
        WindowCase{"bf16_window0_empty_rows_d64", 1, 70, 6, 1, 64, 64, 0, at::kBFloat16}),
    case_name);

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


// The same inputs through v1 (forced) and v2 (forward, backward dq and dk/dv): both
// match the reference, and their logsumexps agree.
TEST(WindowAttention, V1AndV2BothMatchReference) {
  NSA_REQUIRE_CUDA();
  struct Case {
    const char* name;
    int64_t B, S, H, G, dk, dv, window;
    at::ScalarType dtype;
  };
  for (const Case& c : {Case{"bf16_m7c_like_S200_h6_d64", 1, 200, 12, 2, 64, 64, 64, at::kBFloat16},
                        Case{"fp16_paper_like_S130_h16_d192_dv128", 2, 130, 32, 2, 192, 128, 100, at::kHalf}}) {
    const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, 4000 + c.S);
    const double scale = 1.0 / std::sqrt(double(c.dk));
    BranchSpec spec;
    spec.branch = Branch::Window, spec.window = c.window, spec.scale = scale;
    const at::Tensor ref = ref_window_attention(in.q.cpu().to(at::kDouble), in.k.cpu().to(at::kDouble),
                                                in.v.cpu().to(at::kDouble), c.window, scale);
    testing::check_v1_and_v2(c.name, in, spec, ref);
    for (bool v1 : {true, false}) {  // and the gradients through either forward
      testing::ForceV1Scope force(v1);
      testing::check_branch(
          std::string(c.name) + (v1 ? " (v1 forward)" : " (v2 forward)"), in,
          [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
            return window_attention(q, k, v, c.window, scale);
          },
          [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
            return ref_window_attention(q, k, v, c.window, scale);
          });
      EXPECT_EQ(last_forward_kernel_version(), v1 ? 1 : 2);
      EXPECT_EQ(last_dq_kernel_version(), v1 ? 1 : 2);
      EXPECT_EQ(last_dkdv_kernel_version(), v1 ? 1 : 2);
    }
  }
}

// The window through libtorch's FlashAttention-2 (window_flash.h, the layer's
// choice where it applies) against the same float64 reference: output and
// every gradient, through ATen's own backward, on the band edges and one head,
// d = 256.
class FlashWindow : public ::testing::TestWithParam<WindowCase> {};

TEST_P(FlashWindow, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const WindowCase& c = GetParam();
  const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, /*seed=*/5000 + c.S);
  ASSERT_EQ(flash_window_declines(in.q, in.k, in.v, c.window), "") << c.name;
  check_window(c, in, std::string(c.name) + " (FlashAttention-2)", &flash_window_attention);
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashWindow,
                         ::testing::ValuesIn(band_edges({
                             WindowCase{"fp16_S1_h1", 1, 1, 1, 1, 64, 64, 512, at::kHalf},
                             WindowCase{"bf16_S200_d256_w33", 1, 200, 2, 1, 256, 256, 33, at::kBFloat16},
                         })),
                         case_name);

// What FA2 does not take is declined with the reason (the layer then runs our kernel).
TEST(FlashWindow, DeclinesWhatFlashAttentionDoesNotTake) {
  const auto cpu = at::zeros({1, 8, 2, 64}, at::kBFloat16);
  EXPECT_EQ(flash_window_declines(cpu, cpu, cpu, 4), "not CUDA tensors");
  NSA_REQUIRE_CUDA();
  const auto mk = [](int64_t S, int64_t heads, int64_t d, at::ScalarType dt) {
    return at::zeros({1, S, heads, d}, at::TensorOptions().device(at::kCUDA).dtype(dt));
  };
  const auto q = mk(8, 4, 64, at::kBFloat16), k = mk(8, 2, 64, at::kBFloat16);
  EXPECT_EQ(flash_window_declines(q, k, k, 4), "");
  EXPECT_EQ(flash_window_declines(mk(8, 4, 64, at::kFloat), mk(8, 2, 64, at::kFloat), mk(8, 2, 64, at::kFloat), 4),
            "dtype is neither fp16 nor bf16");
  EXPECT_EQ(flash_window_declines(mk(8, 4, 192, at::kBFloat16), mk(8, 2, 192, at::kBFloat16), k, 4),
            "q, k, v head dims differ");  // the paper's 192 / 128
  EXPECT_EQ(flash_window_declines(mk(8, 4, 264, at::kBFloat16), mk(8, 2, 264, at::kBFloat16),
                                  mk(8, 2, 264, at::kBFloat16), 4),
            "head dim is not a multiple of 8 up to 256");
  EXPECT_EQ(flash_window_declines(q, mk(9, 2, 64, at::kBFloat16), mk(9, 2, 64, at::kBFloat16), 4),
            "keys and queries differ in number");
  EXPECT_EQ(flash_window_declines(q, mk(8, 3, 64, at::kBFloat16), mk(8, 3, 64, at::kBFloat16), 4),
            "query heads are not a multiple of the KV groups");
  EXPECT_EQ(flash_window_declines(q, k, k, 0), "window < 1");
}

// The window through cuDNN's fused attention (window_cudnn.h, the layer's
// default where cuDNN has an engine) against the same float64 reference:
// output, and every gradient through each backward that can follow cuDNN's
// forward (ours from cuDNN's logsumexp, the default; cuDNN's own, deterministic
// and with atomics: NSA_WINDOW_BWD's ours, cudnn, cudnn_atomic), each named
// with the call, on the band edges, a window one less than the sequence and the
// m7c training window.
class CudnnWindow : public ::testing::TestWithParam<WindowCase> {};

constexpr std::pair<CudnnBackward, const char*> kCudnnBackwards[] = {
    {CudnnBackward::ours, "our backward"},
    {CudnnBackward::cudnn_deterministic, "cuDNN deterministic backward"},
    {CudnnBackward::cudnn_atomic, "cuDNN backward"}};

// cudnn_window_attention with its backward named at the call.
WindowFn cudnn_with(CudnnBackward backward) {
  return [backward](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window, double scale) {
    return cudnn_window_attention(q, k, v, window, scale, backward);
  };
}

TEST_P(CudnnWindow, MatchesReference) {
  NSA_REQUIRE_CUDA();
  const WindowCase& c = GetParam();
  const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, /*seed=*/6000 + c.S);
  for (const auto& [backward, label] : kCudnnBackwards) {
    ASSERT_EQ(cudnn_window_declines(in.q, in.k, in.v, c.window, backward), "") << c.name << ", " << label;
    check_window(c, in, std::string(c.name) + " (cuDNN forward, " + label + ")", cudnn_with(backward));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudnnWindow,
                         ::testing::ValuesIn(band_edges({
                             WindowCase{"bf16_m7c_S2048_h6_d64_w512", 1, 2048, 12, 2, 64, 64, 512, at::kBFloat16},
                             WindowCase{"bf16_S70_w_one_less_than_S", 1, 70, 6, 1, 64, 64, 69, at::kBFloat16},
                         })),
                         case_name);

// The paper's heads (dk 192, dv 128; 16 per group): cuDNN takes them on some
// GPUs and versions (Hopper, 9.19+) and not others. Where it takes them the
// layer routes them there, so they must be right; where not, it says why.
TEST(CudnnWindow, PaperHeadsAreRightWhereverCudnnTakesThem) {
  NSA_REQUIRE_CUDA();
  const WindowCase c{"bf16_paper_B2_S130_h16_d192_dv128_w100", 2, 130, 32, 2, 192, 128, 100, at::kBFloat16};
  const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, /*seed=*/6300);
  const std::string why = cudnn_window_declines(in.q, in.k, in.v, c.window);
  if (!why.empty()) {
    EXPECT_NE(why.find("cuDNN declines"), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
  check_window(c, in, std::string(c.name) + " (cuDNN forward, our backward)", cudnn_with(CudnnBackward::ours));
}

// Two backward passes over the same inputs give the same bits with our backward
// and with cuDNN's deterministic one.
TEST(CudnnWindow, BackwardIsReproducible) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(2, 777, 777, 12, 2, 64, 64, at::kBFloat16, 6100);
  for (const auto& [backward, label] : kCudnnBackwards) {
    if (backward == CudnnBackward::cudnn_atomic) continue;
    ASSERT_EQ(cudnn_window_declines(in.q, in.k, in.v, 128, backward), "") << label;
    std::vector<at::Tensor> first;
    for (int run = 0; run < 2; ++run) {
      const at::Tensor q = in.q.detach().requires_grad_(true), k = in.k.detach().requires_grad_(true),
                       v = in.v.detach().requires_grad_(true);
      const at::Tensor o = cudnn_window_attention(q, k, v, 128, 0.125, backward);
      const auto g = torch::autograd::grad({o}, {q, k, v}, {in.dout});
      std::vector<at::Tensor> now = {o.detach(), g[0], g[1], g[2]};
      if (run == 0) {
        first = now;
        continue;
      }
      for (size_t i = 0; i < now.size(); ++i) EXPECT_TRUE(at::equal(first[i], now[i])) << label << ", tensor " << i;
    }
  }
}

// Each call's backward is the one named with its forward, saved with it: in one
// graph, a call with our backward and then a call with cuDNN's deterministic one
// (chosen after the first forward and before its backward) each give the bits
// of that backward alone. Both backwards are reproducible bit for bit
// (BackwardIsReproducible) and differ from each other in their rounding here,
// so a backward taken from anywhere but its own call shows as unequal bits.
TEST(CudnnWindow, EachCallKeepsTheBackwardNamedWithItsForward) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(2, 777, 777, 12, 2, 64, 64, at::kBFloat16, 6400);
  constexpr auto kOurs = CudnnBackward::ours, kCudnn = CudnnBackward::cudnn_deterministic;
  for (auto b : {kOurs, kCudnn}) ASSERT_EQ(cudnn_window_declines(in.q, in.k, in.v, 128, b), "");
  const auto leaves = [&] {
    return std::vector<at::Tensor>{in.q.detach().requires_grad_(true), in.k.detach().requires_grad_(true),
                                   in.v.detach().requires_grad_(true)};
  };
  // dq, dk, dv of one call alone.
  const auto alone = [&](CudnnBackward b) {
    const auto x = leaves();
    return torch::autograd::grad({cudnn_window_attention(x[0], x[1], x[2], 128, 0.125, b)}, x, {in.dout});
  };
  const auto ours = alone(kOurs), cudnn = alone(kCudnn);
  bool differ = false;
  for (size_t i = 0; i < 3; ++i) differ |= !at::equal(ours[i], cudnn[i]);
  ASSERT_TRUE(differ) << "the two backwards give the same bits here: this test could not tell them apart";
  // Both in one graph, the second chosen between the first's forward and backward.
  const auto a = leaves(), b = leaves();
  const at::Tensor oa = cudnn_window_attention(a[0], a[1], a[2], 128, 0.125, kOurs);
  const at::Tensor ob = cudnn_window_attention(b[0], b[1], b[2], 128, 0.125, kCudnn);
  const auto g = torch::autograd::grad({oa, ob}, {a[0], a[1], a[2], b[0], b[1], b[2]}, {in.dout, in.dout});
  const char* names[] = {"dq", "dk", "dv"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(at::equal(g[i], ours[i])) << names[i] << " of the call with our backward";
    EXPECT_TRUE(at::equal(g[3 + i], cudnn[i])) << names[i] << " of the call with cuDNN's backward";
  }
}

// NSA_WINDOW_BWD's choices (nsa/flags.cpp) are `auto` and the backwards the
// flag's doc names, no more and no fewer; `auto` resolves to ours (reproducible)
// or cuDNN's with atomics (fast); any other text is refused naming the flag.
// Runs without a device.
TEST(CudnnWindow, FlagValuesNameTheBackwards) {
  testing::expect_cudnn_backward_flag("NSA_WINDOW_BWD", CudnnBackward::ours, CudnnBackward::cudnn_atomic);
}

// A shape first met inside a CUDA graph capture is declined (building a plan
// compiles kernels and may synchronize, which a capture forbids); a shape
// planned before runs inside the capture, and the replay computes what the
// eager call did.
TEST(CudnnWindow, CaptureUsesOnlyPlansBuiltBeforeIt) {
  NSA_REQUIRE_CUDA();
  if (!testing::capture_possible()) GTEST_SKIP() << "capture needs the caching allocator";
  const auto in = testing::make_inputs(1, 96, 96, 4, 2, 64, 64, at::kBFloat16, 6200);
  const auto fresh = testing::make_inputs(1, 97, 97, 4, 2, 64, 64, at::kBFloat16, 6201);
  ASSERT_EQ(cudnn_window_declines(in.q, in.k, in.v, 32), "");
  const at::Tensor eager = cudnn_window_attention(in.q, in.k, in.v, 32, 0.125);
  at::cuda::CUDAGraph graph;
  at::Tensor captured;
  std::string why_known, why_fresh;
  {
    c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
    graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    why_known = cudnn_window_declines(in.q, in.k, in.v, 32);
    why_fresh = cudnn_window_declines(fresh.q, fresh.k, fresh.v, 32);
    captured = cudnn_window_attention(in.q, in.k, in.v, 32, 0.125);
    graph.capture_end();
  }
  graph.replay();
  EXPECT_EQ(why_known, "");
  EXPECT_EQ(why_fresh, "no cuDNN plan built for this shape before the CUDA graph capture");
  EXPECT_TRUE(at::equal(captured, eager));
  EXPECT_EQ(cudnn_window_declines(fresh.q, fresh.k, fresh.v, 32), "");  // planned now, outside the capture
}

// The process runs on the libcudnn beside libtorch (the nvidia-cudnn wheel),
// not another copy our link line could have put first in the search path
// (there is one libcudnn.so.9 per process, libtorch's SDPA included).
TEST(CudnnWindow, RunsOnTheCudnnTorchShips) {
  NSA_REQUIRE_CUDA();
  Dl_info torch_lib{};
  ASSERT_NE(dladdr(reinterpret_cast<const void*>(&at::cuda::getCurrentDeviceProperties), &torch_lib), 0);  // libtorch_cuda.so
  const std::filesystem::path wheel = std::filesystem::path(torch_lib.dli_fname).parent_path() /
                                      "../../nvidia/cudnn/lib/libcudnn.so.9";
  if (!std::filesystem::exists(wheel)) GTEST_SKIP() << "torch's cuDNN is not a wheel beside it: " << wheel;
  EXPECT_TRUE(std::filesystem::equivalent(cudnn_library_path(), wheel))
      << "loaded " << cudnn_library_path() << ", torch ships " << wheel;
}

// What cuDNN cannot take is declined with the reason (the layer then runs our kernel).
TEST(CudnnWindow, DeclinesWhatCudnnDoesNotTake) {
  const auto cpu = at::zeros({1, 8, 2, 64}, at::kBFloat16);
  EXPECT_EQ(cudnn_window_declines(cpu, cpu, cpu, 4), "not CUDA tensors");
  NSA_REQUIRE_CUDA();
  const auto mk = [](int64_t S, int64_t heads, int64_t d, at::ScalarType dt) {
    return at::zeros({1, S, heads, d}, at::TensorOptions().device(at::kCUDA).dtype(dt));
  };
  const auto q = mk(8, 4, 64, at::kBFloat16), k = mk(8, 2, 64, at::kBFloat16);
  EXPECT_EQ(cudnn_window_declines(q, k, k, 4), "");
  EXPECT_EQ(cudnn_window_declines(mk(8, 4, 64, at::kFloat), mk(8, 2, 64, at::kFloat), mk(8, 2, 64, at::kFloat), 4),
            "dtype is neither fp16 nor bf16");
  EXPECT_EQ(cudnn_window_declines(q, mk(9, 2, 64, at::kBFloat16), mk(9, 2, 64, at::kBFloat16), 4),
            "keys and queries differ in number");
  EXPECT_EQ(cudnn_window_declines(q, mk(8, 3, 64, at::kBFloat16), mk(8, 3, 64, at::kBFloat16), 4),
            "query heads are not a multiple of the KV groups");
  EXPECT_EQ(cudnn_window_declines(q, k, k, 0), "window < 1");
  // Head dims our backward does not tile.
  const auto d72 = mk(8, 2, 72, at::kBFloat16);
  EXPECT_EQ(cudnn_window_declines(mk(8, 4, 72, at::kBFloat16), d72, d72, 4),
            "head dims are not multiples of 16 (our backward)");
  // ... which is no reason when the backward is cuDNN's: cuDNN answers for itself.
  for (auto b : {CudnnBackward::cudnn_deterministic, CudnnBackward::cudnn_atomic})
    EXPECT_NE(cudnn_window_declines(mk(8, 4, 72, at::kBFloat16), d72, d72, 4, b),
              "head dims are not multiples of 16 (our backward)");
  // One query and one key: cuDNN's backward has no engine for it (measured on
  // an H200, cuDNN 9.19: "s_q = s_kv = 1 is not supported"), asked when the
  // call names cuDNN's backward.
  const auto one = mk(1, 1, 64, at::kHalf);
  EXPECT_NE(cudnn_window_declines(one, one, one, 4, CudnnBackward::cudnn_deterministic).find("cuDNN declines"),
            std::string::npos);
}

// BackwardDq::atomic (testing::check_dq_in_dkdv): our window kernels' backward
// with dq added by the dk/dv kernel, on m7c's window over several key tiles,
// the band's edges (window 1, window past S), and 128/128 (no room for dS^T:
// the dq kernel runs); then cuDNN's forward with that backward.
TEST(WindowAttention, AtomicDqMatchesReference) {
  NSA_REQUIRE_CUDA();
  testing::ForceV1Scope force(false);
  struct Case {
    WindowCase c;
    bool applies;
  };
  for (const Case& k : {Case{{"bf16_S700_h6_d64_w512", 1, 700, 12, 2, 64, 64, 512, at::kBFloat16}, true},
                        Case{{"fp16_B2_S300_h6_d64_w64", 2, 300, 12, 2, 64, 64, 64, at::kHalf}, true},
                        Case{{"bf16_S77_w1_self_only", 1, 77, 4, 2, 64, 64, 1, at::kBFloat16}, true},
                        Case{{"bf16_S70_w_longer_than_S", 1, 70, 6, 1, 64, 64, 512, at::kBFloat16}, true},
                        Case{{"bf16_S130_h4_d192_dv128_w100", 1, 130, 4, 1, 192, 128, 100, at::kBFloat16}, true},
                        Case{{"fp16_S129_h16_d128_w100_no_room", 1, 129, 16, 1, 128, 128, 100, at::kHalf}, false}}) {
    const WindowCase& c = k.c;
    SCOPED_TRACE(c.name);
    const auto in = testing::make_inputs(c.B, c.S, c.S, c.H, c.G, c.dk, c.dv, c.dtype, 9000 + c.S);
    const double scale = 1.0 / std::sqrt(double(c.dk));
    BranchSpec spec;
    spec.branch = Branch::Window, spec.window = c.window, spec.scale = scale;
    const testing::AttnFn reference = [&](const at::Tensor& q, const at::Tensor& kk, const at::Tensor& v) {
      return ref_window_attention(q, kk, v, c.window, scale);
    };
    testing::check_dq_in_dkdv(
        c.name, in, spec,
        [&](const at::Tensor& q, const at::Tensor& kk, const at::Tensor& v) {
          return window_attention(q, kk, v, c.window, scale, BackwardDq::atomic);
        },
        reference, k.applies);
    if (cudnn_window_declines(in.q, in.k, in.v, c.window).empty())
      check_window(c, in, std::string(c.name) + " (cuDNN forward, our backward, dq atomic)",
                   [](const at::Tensor& q, const at::Tensor& kk, const at::Tensor& v, int64_t w, double s) {
                     return cudnn_window_attention(q, kk, v, w, s, CudnnBackward::ours, BackwardDq::atomic);
                   });
  }
}

}  // namespace
}  // namespace nsa::cuda
