// copy_spans (weight_copy.h): pairs of 2-D row-strided spans, converted element
// by element. blockIdx.y picks the span, the blocks along x stride over its
// rows and the threads over a row's columns, four elements at a time where the
// span's row length, row strides and pointers allow (no division per element);
// a block past a small span's last row exits at once. Memory-bound: each
// element is read once and written once (~0.5 GB a step at m7c_125m in each
// direction).
#include <algorithm>
#include <cstdint>
#include <limits>

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "nsa/cuda/packs.cuh"
#include "nsa/cuda/weight_copy.h"

namespace nsa::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxSpans = 96;        // 96 x 40 bytes of spans: within the 4 KB of kernel parameters
constexpr int kBlocksPerSpan = 128;  // blocks along x, striding over a span's rows
constexpr int kVec = 4;              // elements per access where a span allows it

struct Span {
  const void* src;
  void* dst;
  int32_t rows, cols, src_ld, dst_ld;  // elements; ld = the row stride
  int32_t vec;                         // kVec or 1
};
struct SpanList {
  Span span[kMaxSpans];
};

template <typename S, typename D>
__global__ void __launch_bounds__(kThreads) nsa_copy_spans_kernel(const SpanList list) {
  const Span& s = list.span[blockIdx.y];
  for (int r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const S* src = static_cast<const S*>(s.src) + int64_t(r) * s.src_ld;
    D* dst = static_cast<D*>(s.dst) + int64_t(r) * s.dst_ld;
    // Through float: ATen's copy converts S -> D the same way (c10's
    // constructors round to nearest even and keep NaN).
    if (s.vec == kVec) {
      for (int c = threadIdx.x * kVec; c < s.cols; c += kThreads * kVec) {
        const Pack<S, kVec> in = *reinterpret_cast<const Pack<S, kVec>*>(src + c);
        Pack<D, kVec> out;
#pragma unroll
        for (int i = 0; i < kVec; ++i) out.v[i] = static_cast<D>(static_cast<float>(in.v[i]));
        *reinterpret_cast<Pack<D, kVec>*>(dst + c) = out;
      }
    } else {
      for (int c = threadIdx.x; c < s.cols; c += kThreads) dst[c] = static_cast<D>(static_cast<float>(src[c]));
    }
  }
}

// A 1-D tensor as one row (one block copies it: the model's 1-D weights are
// biases of a few thousand elements at most); a 2-D one as its rows.
void describe(const at::Tensor& t, int64_t* rows, int64_t* cols, int64_t* ld) {
  if (t.dim() == 1) {
    *rows = 1, *cols = t.size(0), *ld = t.size(0);
  } else {
    *rows = t.size(0), *cols = t.size(1), *ld = t.stride(0);
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

void copy_spans(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  TORCH_CHECK(dst.size() == src.size(), "copy_spans: ", dst.size(), " destinations for ", src.size(), " sources");
  if (dst.empty()) return;
  const at::ScalarType dt = dst[0].scalar_type(), st = src[0].scalar_type();
  for (size_t i = 0; i < dst.size(); ++i) {
    const at::Tensor &d = dst[i], &s = src[i];
    TORCH_CHECK(d.is_cuda() && s.is_cuda() && d.device() == dst[0].device() && s.device() == dst[0].device(),
                "copy_spans: pair ", i, " is not on ", dst[0].device());
    TORCH_CHECK(d.scalar_type() == dt && s.scalar_type() == st, "copy_spans: pair ", i, " is ", s.scalar_type(),
                " -> ", d.scalar_type(), ", the first ", st, " -> ", dt);
    TORCH_CHECK(d.sizes() == s.sizes(), "copy_spans: pair ", i, " sizes ", s.sizes(), " -> ", d.sizes());
    TORCH_CHECK((d.dim() == 1 || d.dim() == 2) && (d.numel() == 0 || (d.stride(-1) == 1 && s.stride(-1) == 1)),
                "copy_spans: pair ", i, " must be 1-D or 2-D with unit stride along the last dimension, got strides ",
                s.strides(), " -> ", d.strides());
    const int64_t limit = std::numeric_limits<int32_t>::max();
    TORCH_CHECK(d.size(0) <= limit && d.size(-1) <= limit && (d.dim() == 1 || (d.stride(0) <= limit && s.stride(0) <= limit)),
                "copy_spans: pair ", i, " has sizes or strides past 32 bits: ", d.sizes());
  }
  const c10::cuda::CUDAGuard guard(dst[0].device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto launch = [&](auto src_zero, auto dst_zero) {
    using S = decltype(src_zero);
    using D = decltype(dst_zero);
    for (size_t first = 0; first < dst.size(); first += kMaxSpans) {
      SpanList list{};
      int n = 0;
      for (size_t i = first; i < std::min(dst.size(), first + kMaxSpans); ++i) {
        if (dst[i].numel() == 0) continue;
        Span& sp = list.span[n++];
        int64_t rows, cols, src_ld, dst_ld;
        describe(dst[i], &rows, &cols, &dst_ld);
        describe(src[i], &rows, &cols, &src_ld);
        sp.rows = int32_t(rows), sp.cols = int32_t(cols), sp.src_ld = int32_t(src_ld), sp.dst_ld = int32_t(dst_ld);
        sp.src = src[i].data_ptr(), sp.dst = dst[i].data_ptr();
        const bool vec = cols % kVec == 0 && src_ld % kVec == 0 && dst_ld % kVec == 0 &&
                         aligned(sp.src, kVec * sizeof(S)) && aligned(sp.dst, kVec * sizeof(D));
        sp.vec = vec ? kVec : 1;
      }
      if (n == 0) continue;
      nsa_copy_spans_kernel<S, D><<<dim3(kBlocksPerSpan, n), kThreads, 0, stream>>>(list);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  };
  // The two directions the model needs: parameters (fp32) into 16-bit copies,
  // 16-bit gradients into fp32 ones; and fp32 <-> fp32 for completeness.
  const auto to_dst = [&](auto src_zero) {
    switch (dt) {
      case at::kFloat: return launch(src_zero, float{});
      case at::kBFloat16: return launch(src_zero, c10::BFloat16{});
      case at::kHalf: return launch(src_zero, c10::Half{});
      default: TORCH_CHECK(false, "copy_spans: destination dtype ", dt, " is not float32, bfloat16 or float16");
    }
  };
  switch (st) {
    case at::kFloat: return to_dst(float{});
    case at::kBFloat16: return to_dst(c10::BFloat16{});
    case at::kHalf: return to_dst(c10::Half{});
    default: TORCH_CHECK(false, "copy_spans: source dtype ", st, " is not float32, bfloat16 or float16");
  }
}

}  // namespace nsa::cuda
