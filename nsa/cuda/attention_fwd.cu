// Attention forward for the three NSA branches, one kernel body, three names.
//
// Versions:
//   v2  tensor cores for fp16/bf16, attention_fwd_tc.cu; launch_attention_fwd
//       below tries it first (NSA_CUDA_KERNEL_V1=1 forces v1).
//   v1  SIMT fp32, flash-style online softmax. One CTA owns R rows = q_tile
//       consecutive queries x head_chunk heads of one KV group (group-centric:
//       the heads of a group share every K/V tile loaded, as in the paper), walks
//       the keys the branch allows in tiles of 32 (one key per lane), and keeps
//       Q, the tile, the scores and the unnormalised output in shared memory.
//       Why: simplest kernel that is obviously right for every head dim that is a
//       multiple of 16 up to 256 and for all three dtypes; it runs for fp32
//       and the head dims v2 does not tile.
//
// Key sets (attention_ranges.h): Window and Compressed scan one contiguous key
// range per CTA and mask per (query, key); Selected uses q_tile = 1 and scans
// the n chosen blocks of its query, one segment each.
//
// Output: o [B,S,H,dv] in q's dtype; lse [B,S,H] fp32 = m + log(l) per row, or
// +inf when the row saw no key (o = 0 there, never NaN).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/cuda_check.h"

namespace nsa::cuda {
namespace {

template <typename T, Branch BR>
__device__ void attn_fwd_body(const AttnParams& p) {
  constexpr int BC = kKeyTile;
  static_assert(BC == 32, "the softmax step maps one key per lane");
  extern __shared__ float smem[];
  const int R = p.rows, DK = p.dk, DV = p.dv, ldk = DK + 1;
  float* Qs = smem;                 // [R][DK+1]  q * scale
  float* Ks = Qs + R * ldk;         // [BC][DK+1]
  float* Vs = Ks + BC * ldk;        // [BC][DV]
  float* Ss = Vs + BC * DV;         // [R][BC+1]  scores, then probabilities
  float* Os = Ss + R * (BC + 1);    // [R][DV]    unnormalised output
  float* row_m = Os + R * DV;       // running max
  float* row_l = row_m + R;         // running sum of exp
  float* row_a = row_l + R;         // rescale factor of the current tile
  int* row_t = reinterpret_cast<int*>(row_a + R);  // query of the row, -1 = padding
  int* row_hq = row_t + R;                         // query head of the row

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, nwarps = blockDim.x / 32;
  const int n_chunks = ceil_div(p.h, p.head_chunk);
  const int bg = blockIdx.y / n_chunks, chunk = blockIdx.y % n_chunks;
  const int b = bg / p.G, g = bg % p.G;
  const int t0 = blockIdx.x * p.q_tile;
  const int t_last = imin(t0 + p.q_tile, p.S) - 1;

  for (int r = tid; r < R; r += blockDim.x) {
    const int t = t0 + r / p.head_chunk, head = chunk * p.head_chunk + r % p.head_chunk;
    row_t[r] = (t < p.S && head < p.h) ? t : -1;
    row_hq[r] = g * p.h + imin(head, p.h - 1);
    row_m[r] = -INFINITY;
    row_l[r] = 0.f;
  }
  __syncthreads();
  for (int i = tid; i < R * DK; i += blockDim.x) {
    const int r = i / DK, d = i % DK, t = row_t[r];
    Qs[r * ldk + d] = t >= 0 ? to_f(q[row_offset(b, t, row_hq[r], p.S, p.H, DK) + d]) * p.scale : 0.f;
  }
  for (int i = tid; i < R * DV; i += blockDim.x) Os[i] = 0.f;
  __syncthreads();

  const int n_seg = (BR == Branch::Selected) ? p.n_sel : 1;
  for (int seg = 0; seg < n_seg; ++seg) {
    int lo, hi;
    if (BR == Branch::Selected) {
      const int j = p.block_idx[(int64_t(b) * p.S + t0) * p.G * p.n_sel + g * p.n_sel + seg];
      selected_key_range(j, t0, p.Sk, p.sel_block, &lo, &hi);
    } else {
      contiguous_key_range(BR, t0, t_last, p.Sk, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
    }
    for (int kt = lo; kt < hi; kt += BC) {
      // 1. Load the K/V tile (zeros past the segment's end).
      for (int i = tid; i < BC * DK; i += blockDim.x) {
        const int c = i / DK, d = i % DK, key = kt + c;
        Ks[c * ldk + d] = key < hi ? to_f(k[row_offset(b, key, g, p.Sk, p.G, DK) + d]) : 0.f;
      }
      for (int i = tid; i < BC * DV; i += blockDim.x) {
        const int c = i / DV, e = i % DV, key = kt + c;
        Vs[i] = key < hi ? to_f(v[row_offset(b, key, g, p.Sk, p.G, DV) + e]) : 0.f;
      }
      __syncthreads();
      // 2. Scores of every (row, key); invisible pairs get -inf.
      for (int i = tid; i < R * BC; i += blockDim.x) {
        const int r = i / BC, c = i % BC, key = kt + c, t = row_t[r];
        float s = -INFINITY;
        if (t >= 0 && key < hi && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride)) {
          s = 0.f;
          for (int d = 0; d < DK; ++d) s += Qs[r * ldk + d] * Ks[c * ldk + d];
        }
        Ss[r * (BC + 1) + c] = s;
      }
      __syncthreads();
      // 3. Online softmax, one warp per row: new max, rescale factor, probabilities.
      for (int r = warp; r < R; r += nwarps) {
        const float s = Ss[r * (BC + 1) + lane];
        const float m_old = row_m[r];
        const float m_new = fmaxf(m_old, warp_max(s));
        const float pr = (s == -INFINITY) ? 0.f : expf(s - m_new);  // all -inf -> 0
        const float sum = warp_sum(pr);
        Ss[r * (BC + 1) + lane] = pr;
        __syncwarp();  // every lane has read row_m[r] before lane 0 rewrites it
        if (lane == 0) {
          const float alpha = (m_new == -INFINITY) ? 1.f : expf(m_old - m_new);
          row_a[r] = alpha;
          row_m[r] = m_new;
          row_l[r] = row_l[r] * alpha + sum;
        }
      }
      __syncthreads();
      // 4. O = O * alpha + P V.
      for (int i = tid; i < R * DV; i += blockDim.x) {
        const int r = i / DV, e = i % DV;
        float acc = Os[i] * row_a[r];
        for (int c = 0; c < BC; ++c) acc += Ss[r * (BC + 1) + c] * Vs[c * DV + e];
        Os[i] = acc;
      }
      __syncthreads();
    }
  }

  // 5. Normalise and write; rows with no visible key write 0 and lse = +inf.
  T* o = static_cast<T*>(p.o);
  for (int i = tid; i < R * DV; i += blockDim.x) {
    const int r = i / DV, e = i % DV, t = row_t[r];
    if (t < 0) continue;
    const float l = row_l[r];
    o[row_offset(b, t, row_hq[r], p.S, p.H, DV) + e] = T(l > 0.f ? Os[i] / l : 0.f);
  }
  for (int r = tid; r < R; r += blockDim.x) {
    const int t = row_t[r];
    if (t < 0) continue;
    const float l = row_l[r];
    p.lse_out[(int64_t(b) * p.S + t) * p.H + row_hq[r]] = l > 0.f ? row_m[r] + logf(l) : INFINITY;
  }
}

// Three names so a kernel trace tells the branches apart (kernel_registry.cpp).
template <typename T>
__global__ void __launch_bounds__(kThreads) nsa_window_fwd_kernel(AttnParams p) {
  attn_fwd_body<T, Branch::Window>(p);
}
template <typename T>
__global__ void __launch_bounds__(kThreads) nsa_compressed_fwd_kernel(AttnParams p) {
  attn_fwd_body<T, Branch::Compressed>(p);
}
template <typename T>
__global__ void __launch_bounds__(kThreads) nsa_selected_fwd_kernel(AttnParams p) {
  attn_fwd_body<T, Branch::Selected>(p);
}

template <typename T>
void launch(Branch br, AttnParams& p) {
  choose_query_tiling(br, fwd_smem_floats, p);
  const size_t smem = fwd_smem_floats(p.rows, p.dk, p.dv) * sizeof(float);
  const dim3 grid(ceil_div(p.S, p.q_tile), p.B * p.G * ceil_div(p.h, p.head_chunk));
  launch_kernel(branch_kernel(br, nsa_window_fwd_kernel<T>, nsa_compressed_fwd_kernel<T>, nsa_selected_fwd_kernel<T>),
                grid, kThreads, smem, p);
}

}  // namespace

void launch_attention_fwd(Branch br, at::ScalarType dtype, AttnParams& p) {
  if (p.S == 0 || p.B == 0) return;
  if (launch_attention_fwd_tc(br, dtype, p)) return;  // v2 (tensor cores) where it tiles
  NSA_DISPATCH_FLOAT_TYPES(dtype, "attention forward", [&] { launch<scalar_t>(br, p); });
}

}  // namespace nsa::cuda
