// copy_spans (weight_copy.h) against ATen's copy_, the cast it must agree with
// bit for bit: column slices of a wider tensor both ways, the values where
// rounding differs (ties, subnormals, overflow, NaN, infinities), more pairs
// than one launch takes, a captured CUDA graph, and the errors.
#include <algorithm>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/test_util.h"
#include "nsa/cuda/weight_copy.h"

namespace nsa::cuda {
namespace {

at::TensorOptions cuda(at::ScalarType t) { return at::TensorOptions().dtype(t).device(at::kCUDA); }

// fp32 values whose 16-bit rounding is easy to get wrong, then random ones.
at::Tensor awkward_fp32(int64_t rows, int64_t cols, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor t = at::randn({rows, cols}, cuda(at::kFloat)) * 3;
  const std::vector<float> edge = {0.f, -0.f, 1.f + 1.f / 256, 1.f + 3.f / 256, 1.f + 1.f / 2048, 65504.f, 65520.f,
                                   1e5f, -1e5f, 1e-8f, 6e-8f, 1e-40f, -1e-45f, 3.4e38f,
                                   std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN()};
  const at::Tensor e = at::tensor(edge, at::kFloat).to(at::kCUDA);
  t.view(-1).narrow(0, 0, std::min<int64_t>(e.numel(), t.numel())).copy_(e.narrow(0, 0, std::min<int64_t>(e.numel(), t.numel())));
  return t;
}

// Bitwise equality that counts NaN == NaN (the bits of a float NaN after a
// conversion are not all pinned down: only "is NaN" is compared there).
void expect_same_values(const at::Tensor& got, const at::Tensor& want, const char* what) {
  const at::Tensor g = got.to(at::kFloat).cpu(), w = want.to(at::kFloat).cpu();
  ASSERT_EQ(g.sizes(), w.sizes()) << what;
  EXPECT_TRUE(at::equal(at::isnan(g), at::isnan(w))) << what << ": NaN positions differ";
  const at::Tensor ok = at::logical_or(at::eq(g, w), at::logical_and(at::isnan(g), at::isnan(w)));
  EXPECT_TRUE(ok.all().item<bool>()) << what << ": " << (ok.numel() - ok.sum().item<int64_t>()) << " values differ";
  // -0 and +0 compare equal: their signs must match too (NaN's sign is not pinned down).
  EXPECT_TRUE(at::equal(at::signbit(g).masked_fill(at::isnan(g), false), at::signbit(w).masked_fill(at::isnan(w), false)))
      << what << ": signs";
}

TEST(CopySpans, ColumnSlicesRoundAsAtenBothWays) {
  NSA_REQUIRE_CUDA();
  for (at::ScalarType half : {at::kBFloat16, at::kHalf}) {
    SCOPED_TRACE(c10::toString(half));
    // Three weights of one group (as the projection's) and a lone 1-D one.
    const std::vector<at::Tensor> masters = {awkward_fp32(64, 96, 1), awkward_fp32(64, 32, 2),
                                             awkward_fp32(64, 48, 3), awkward_fp32(1, 40, 4).view({40})};
    const at::Tensor sentinel = at::full({}, 7.f, cuda(half));
    at::Tensor group = sentinel.expand({64, 96 + 32 + 48 + 16}).contiguous();  // 16 columns nobody owns
    at::Tensor lone = at::empty({40}, cuda(half));
    const std::vector<at::Tensor> copies = {group.narrow(1, 0, 96), group.narrow(1, 96, 32),
                                            group.narrow(1, 128, 48), lone};
    copy_spans(copies, masters);
    for (size_t i = 0; i < masters.size(); ++i) expect_same_values(copies[i], masters[i].to(half), "weight");
    EXPECT_TRUE((group.narrow(1, 176, 16) == 7).all().item<bool>()) << "a column outside every slice was written";

    // Back: 16-bit gradient slices into fp32 tensors.
    const at::Tensor grad = awkward_fp32(64, 192, 5).to(half);
    const std::vector<at::Tensor> slices = {grad.narrow(1, 0, 96), grad.narrow(1, 96, 32), grad.narrow(1, 128, 48)};
    std::vector<at::Tensor> out;
    for (const at::Tensor& s : slices) out.push_back(at::full(s.sizes(), 9.f, cuda(at::kFloat)));
    copy_spans(out, slices);
    for (size_t i = 0; i < out.size(); ++i) expect_same_values(out[i], slices[i].to(at::kFloat), "gradient");
  }
}

TEST(CopySpans, ManyPairsOfEveryShapeInOneCall) {
  NSA_REQUIRE_CUDA();
  std::vector<at::Tensor> src, dst;
  for (int i = 0; i < 130; ++i) {  // more than one launch's worth
    const int64_t rows = 1 + (i * 7) % 33, cols = (i % 5 == 0) ? 0 : 1 + (i * 13) % 300;
    src.push_back(i % 3 == 0 ? awkward_fp32(1, rows * cols, 100 + i).view({rows * cols})
                             : awkward_fp32(rows, cols, 100 + i));
    dst.push_back(at::empty(src.back().sizes(), cuda(at::kBFloat16)));
  }
  copy_spans(dst, src);
  for (size_t i = 0; i < src.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_values(dst[i], src[i].to(at::kBFloat16), "pair");
  }
}

// A captured copy reads the sources at replay: the step graph replays the
// refresh after the optimizer changed the parameters.
TEST(CopySpans, ReplayedCaptureCopiesTheSourcesAsTheyAreThen) {
  NSA_REQUIRE_CUDA();
  if (!testing::capture_possible()) GTEST_SKIP() << "capture needs the caching allocator";
  const at::Tensor a = awkward_fp32(32, 64, 11), b = awkward_fp32(1, 50, 12).view({50});
  const at::Tensor group = at::zeros({32, 128}, cuda(at::kBFloat16));
  const at::Tensor bb = at::zeros({50}, cuda(at::kBFloat16));
  at::cuda::CUDAGraph graph;
  {
    c10::cuda::CUDAStreamGuard capturing(c10::cuda::getStreamFromPool());
    graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    copy_spans({group.narrow(1, 64, 64), bb}, {a, b});
    graph.capture_end();
  }
  a.mul_(-2), b.add_(1);
  graph.replay();
  at::cuda::device_synchronize();
  expect_same_values(group.narrow(1, 64, 64), a.to(at::kBFloat16), "replayed");
  expect_same_values(bb, b.to(at::kBFloat16), "replayed 1-D");
  EXPECT_TRUE((group.narrow(1, 0, 64) == 0).all().item<bool>());
}

TEST(CopySpans, RefusesWhatItCannotCopy) {
  NSA_REQUIRE_CUDA();
  const at::Tensor f = at::zeros({8, 16}, cuda(at::kFloat));
  const at::Tensor h = at::zeros({8, 16}, cuda(at::kBFloat16));
  EXPECT_THROW(copy_spans({h}, {f, f}), c10::Error);                                     // count
  EXPECT_THROW(copy_spans({h.narrow(1, 0, 8)}, {f}), c10::Error);                        // sizes
  EXPECT_THROW(copy_spans({at::zeros({16, 8}, cuda(at::kBFloat16)).t()}, {f}), c10::Error);  // column stride
  EXPECT_THROW(copy_spans({h, h}, {f, f.to(at::kHalf)}), c10::Error);                    // one dtype per list
  EXPECT_THROW(copy_spans({h.to(at::kDouble)}, {f}), c10::Error);                        // dtype
  EXPECT_THROW(copy_spans({h.view({2, 4, 16})}, {f.view({2, 4, 16})}), c10::Error);      // 3-D
}

}  // namespace
}  // namespace nsa::cuda
