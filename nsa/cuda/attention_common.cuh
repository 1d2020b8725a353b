// Shared pieces of the attention kernels (forward, dq, dk/dv) of all three
// branches: the parameter block, tile sizes, shared-memory layouts (one
// function per kernel, used by the launcher and the kernel alike so they never
// disagree), warp reductions and the dtype dispatch.
//
// Precision: inputs are fp32/fp16/bf16; every product, softmax and accumulator
// is fp32 (DESIGN.md §2). Outputs are written in the input dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include <ATen/ATen.h>

#include "nsa/cuda/attention_ranges.h"

namespace nsa::cuda {

constexpr int kThreads = 256;         // 8 warps per CTA, every attention kernel
constexpr int kKeyTile = 32;          // keys per tile in the query-centric kernels (one per lane)
// Shared memory a tiling may use: leaves room for 2 CTAs per SM on sm_90 and
// stays under sm_80's 163 KB opt-in limit.
constexpr size_t kSmemBudget = 112 * 1024;

// One parameter block for every attention kernel; unused fields stay 0/null.
struct AttnParams {
  // Tensors (layouts in nsa_cuda.h). Typed pointers are cast in the kernel.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* dout = nullptr;
  void* o = nullptr;
  void* dq_out = nullptr;
  void* dk_out = nullptr;
  void* dv_out = nullptr;
  float* lse_out = nullptr;       // [B,S,H] written by the forward
  const float* lse = nullptr;     // [B,S,H] read by the backward (+inf: no visible key)
  const float* delta = nullptr;   // [B,S,H] rowsum(dO * O)
  const int* block_idx = nullptr;      // selected: [B,S,G,n_sel]
  const int* rev_query = nullptr;      // selected bwd: queries grouped by (b,g,block)
  const int64_t* rev_offset = nullptr; // selected bwd: [B*G*n_blocks + 1]
  // Sizes.
  int B = 0, S = 0, Sk = 0, H = 0, G = 0, h = 0, dk = 0, dv = 0;
  float scale = 0.f;
  // Branch hyper-parameters.
  int window = 0, cmp_block = 0, cmp_stride = 0, sel_block = 0, n_sel = 0, n_blocks = 0;
  // Tiling, filled by the launchers.
  int q_tile = 1;      // query-centric: consecutive queries per CTA
  int head_chunk = 1;  // query-centric: heads of the group per CTA
  int rows = 1;        // query-centric: q_tile * head_chunk; key-centric: rows per chunk
  int key_tile = kKeyTile;  // key-centric: keys per CTA
};

// ---- shared-memory layouts (in floats; row pads of +1 avoid bank conflicts
// where a warp walks down a column) ------------------------------------------
NSA_HD size_t fwd_smem_floats(int R, int dk, int dv) {
  return size_t(R) * (dk + 1) + size_t(kKeyTile) * (dk + 1) + size_t(kKeyTile) * dv +
         size_t(R) * (kKeyTile + 1) + size_t(R) * dv + 5 * size_t(R);
}
NSA_HD size_t dq_smem_floats(int R, int dk, int dv) {
  return size_t(R) * (dk + 1) + size_t(R) * (dv + 1) + size_t(kKeyTile) * (dk + 1) +
         size_t(kKeyTile) * (dv + 1) + size_t(R) * dk + size_t(R) * (kKeyTile + 1) + 4 * size_t(R);
}
NSA_HD size_t dkdv_smem_floats(int R, int BK, int dk, int dv) {
  return size_t(BK) * (dk + 1) + size_t(BK) * (dv + 1) + size_t(BK) * dk + size_t(BK) * dv +
         size_t(R) * (dk + 1) + size_t(R) * (dv + 1) + 2 * size_t(R) * (BK + 1) + 3 * size_t(R);
}

// ---- device helpers ----------------------------------------------------------
#if defined(__CUDACC__)
__device__ __forceinline__ float warp_max(float x) {
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}
template <typename T>
__device__ __forceinline__ float to_f(T x) {
  return static_cast<float>(x);
}
#endif

// Element offsets into the [B, S, heads, dim] tensors.
NSA_HD int64_t row_offset(int b, int t, int head, int S, int heads, int dim) {
  return ((int64_t(b) * S + t) * heads + head) * dim;
}

}  // namespace nsa::cuda

// fp32 / fp16 / bf16 only (no double: the kernels are fp32 inside anyway).
#define NSA_DISPATCH_FLOAT_TYPES(dtype, name, ...)                                  \
  [&] {                                                                             \
    switch (dtype) {                                                                \
      case at::kFloat: {                                                            \
        using scalar_t = float;                                                     \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      case at::kHalf: {                                                             \
        using scalar_t = at::Half;                                                  \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      case at::kBFloat16: {                                                         \
        using scalar_t = at::BFloat16;                                              \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      default:                                                                      \
        TORCH_CHECK(false, name, ": unsupported dtype ", dtype,                     \
                    " (float32, float16, bfloat16 only)");                          \
    }                                                                               \
  }()
