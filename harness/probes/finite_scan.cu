// The scan: one launch over a table of spans. blockIdx.y picks the span,
// blockIdx.x and the threads stride through its elements; a thread that meets
// a NaN or an infinity sets the flag. Nothing is summed, so nothing overflows.
#include "harness/probes/finite_scan.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace harness {
namespace {

enum class SpanType : int32_t { f32, f64, f16, bf16 };

struct Span {
  const void* data;
  int64_t numel;
  SpanType type;
};

constexpr int kThreads = 256;
constexpr int kBlocksPerSpan = 32;  // 8 192 threads a span: the largest m7c tensor (1.5 M) is ~190 each

__device__ bool finite_at(const Span& s, int64_t i) {
  switch (s.type) {
    case SpanType::f32: return isfinite(static_cast<const float*>(s.data)[i]);
    case SpanType::f64: return isfinite(static_cast<const double*>(s.data)[i]);
    case SpanType::f16: return isfinite(__half2float(static_cast<const __half*>(s.data)[i]));
    case SpanType::bf16: return isfinite(__bfloat162float(static_cast<const __nv_bfloat16*>(s.data)[i]));
  }
  return true;
}

__global__ void any_non_finite_kernel(const Span* spans, int* flag) {
  const Span s = spans[blockIdx.y];
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < s.numel; i += stride) {
    if (!finite_at(s, i)) {
      *flag = 1;  // a plain store: every writer writes the same value
      return;
    }
  }
}

SpanType span_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return SpanType::f32;
    case at::kDouble: return SpanType::f64;
    case at::kHalf: return SpanType::f16;
    default: return SpanType::bf16;
  }
}

}  // namespace

bool finite_scan_accepts(const at::Tensor& t) {
  const auto st = t.scalar_type();
  return t.defined() && t.is_cuda() && t.is_contiguous() &&
         (st == at::kFloat || st == at::kDouble || st == at::kHalf || st == at::kBFloat16);
}

bool all_finite_by_scan(const std::vector<at::Tensor>& tensors) {
  std::vector<Span> spans;
  for (const auto& t : tensors) {
    TORCH_CHECK(finite_scan_accepts(t), "all_finite_by_scan: not a contiguous floating CUDA tensor");
    if (t.numel() > 0) spans.push_back({t.data_ptr(), t.numel(), span_type(t.scalar_type())});
  }
  if (spans.empty()) return true;
  const at::Device device = tensors.front().device();
  c10::cuda::CUDAGuard guard(device);
  auto flag = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device));
  // The table goes over as bytes; gridDim.y caps one launch at 65 535 spans.
  auto host = at::empty({int64_t(spans.size() * sizeof(Span))}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(host.data_ptr(), spans.data(), spans.size() * sizeof(Span));
  auto table = host.to(device);
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto* all = reinterpret_cast<const Span*>(table.data_ptr());
  for (size_t first = 0; first < spans.size(); first += 65535) {
    const unsigned n = static_cast<unsigned>(std::min<size_t>(65535, spans.size() - first));
    any_non_finite_kernel<<<dim3(kBlocksPerSpan, n), kThreads, 0, stream>>>(all + first, flag.data_ptr<int>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return flag.item<int>() == 0;
}

}  // namespace harness
