// Which keys each query of a branch may see, written once for the kernels
// (device) and for host-side counting (benchmarks' KV-tokens-per-decode).
// DESIGN.md §2:
//   window      keys [max(0, t-w+1), t]
//   compressed  block i visible iff i*d + l - 1 <= t  ->  i < n_cmp(t)
//   selected    tokens [j*l', (j+1)*l') ∩ [0, t] for each chosen j >= 0
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NSA_HD __host__ __device__ __forceinline__
#else
#define NSA_HD inline
#endif

namespace nsa::cuda {

enum class Branch : int { Window = 0, Compressed = 1, Selected = 2 };

NSA_HD int imin(int a, int b) { return a < b ? a : b; }
NSA_HD int imax(int a, int b) { return a > b ? a : b; }
// Floor division that is right for negative numerators too.
NSA_HD int floor_div(int a, int b) { return (a >= 0) ? a / b : -((-a + b - 1) / b); }
NSA_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Number of compressed blocks visible to query t: floor((t+1-l)/d)+1 if t+1 >= l else 0.
// Div: int, or a FastDiv (fast_div.h) where a kernel divides by d in a loop.
template <typename Div>
NSA_HD int n_cmp_visible(int t, int cmp_block, Div cmp_stride) {
  return (t + 1 >= cmp_block) ? (t + 1 - cmp_block) / cmp_stride + 1 : 0;
}

// Compressed blocks i whose span [i*d, i*d+l) overlaps selection block j's span
// [j*l', (j+1)*l'): i in [lo, hi).
NSA_HD int overlap_lo(int j, int cmp_block, int cmp_stride, int sel_block) {
  return imax(0, floor_div(j * sel_block - cmp_block, cmp_stride) + 1);
}
NSA_HD int overlap_hi(int j, int cmp_stride, int sel_block) {
  return ceil_div((j + 1) * sel_block, cmp_stride);
}

// Is key `key` visible to query t? For Selected, block membership comes from the
// segment list; only causality is checked here.
NSA_HD bool key_visible(Branch br, int t, int key, int window, int cmp_block, int cmp_stride) {
  switch (br) {
    case Branch::Window: return key <= t && key > t - window;
    case Branch::Compressed: return key * cmp_stride + cmp_block - 1 <= t;
    default: return key <= t;
  }
}

// Key range [lo, hi) covering what queries [t0, t1] (inclusive) of a Window or
// Compressed CTA can see; rows are masked per query inside it.
NSA_HD void contiguous_key_range(Branch br, int t0, int t1, int n_keys, int window, int cmp_block,
                                 int cmp_stride, int* lo, int* hi) {
  if (br == Branch::Window) {
    *lo = imax(0, t0 - window + 1);
    *hi = imin(t1 + 1, n_keys);
  } else {
    *lo = 0;
    *hi = imin(n_cmp_visible(t1, cmp_block, cmp_stride), n_keys);
  }
  if (*hi < *lo) *hi = *lo;
}

// Does slot value j of query t's block_idx row choose a block that shows t a
// key? Not -1, not a block past the end, not one that starts after t. The
// reverse index lists exactly these (query, block) pairs, and the KeyOuter
// merges (forward and dq) read a partial for exactly these.
NSA_HD bool block_chosen(int j, int64_t t, int64_t sel_block, int n_blocks) {
  return j >= 0 && j < n_blocks && int64_t(j) * sel_block <= t;
}

// Token range [lo, hi) of selected block j for query t (empty for j < 0, for
// blocks past t and for blocks past the sequence: robust to bad indices).
NSA_HD void selected_key_range(int j, int t, int n_keys, int sel_block, int* lo, int* hi) {
  if (j < 0) {
    *lo = *hi = 0;
    return;
  }
  *lo = j * sel_block;
  *hi = imin(imin((j + 1) * sel_block, t + 1), n_keys);
  if (*hi < *lo) *hi = *lo;
}

// Query range [lo, hi) that can see some key of [k0, k1) (Window, Compressed).
NSA_HD void contiguous_query_range(Branch br, int k0, int k1, int n_queries, int window,
                                   int cmp_block, int cmp_stride, int* lo, int* hi) {
  if (br == Branch::Window) {
    *lo = k0;
    *hi = imin(n_queries, k1 - 1 + window);
  } else {
    *lo = k0 * cmp_stride + cmp_block - 1;
    *hi = n_queries;
  }
  if (*hi < *lo) *hi = *lo;
}

}  // namespace nsa::cuda
