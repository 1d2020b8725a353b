// What a library's sliding-window attention (FlashAttention-2 in
// window_flash.h, cuDNN in window_cudnn.h) needs of the window call before its
// own limits: CUDA tensors of fp16/bf16, all one dtype, q [B,S,H,dk] with k, v
// [B,S,G,·], as many keys as queries, H a multiple of G, a non-empty batch and
// sequence, window >= 1. "" when all hold, else the first that does not.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

inline std::string window_library_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                           int64_t window) {
  if (!q.is_cuda() || !k.is_cuda() || !v.is_cuda()) return "not CUDA tensors";
  const auto dt = q.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16) return "dtype is neither fp16 nor bf16";
  if (k.scalar_type() != dt || v.scalar_type() != dt) return "q, k, v differ in dtype";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "not [B,S,heads,dim] tensors";
  if (k.size(1) != q.size(1) || v.size(1) != q.size(1)) return "keys and queries differ in number";
  if (k.size(2) != v.size(2) || k.size(2) == 0 || q.size(2) % k.size(2) != 0)
    return "query heads are not a multiple of the KV groups";
  if (q.size(0) == 0 || q.size(1) == 0) return "empty batch or sequence";
  if (window < 1) return "window < 1";
  return "";
}

}  // namespace nsa::cuda
