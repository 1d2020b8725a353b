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
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/simt_tiles.cuh"

namespace nsa::cuda {
namespace {

template <typename T, Branch BR>
__device__ void attn_fwd_body(const AttnParams& p) {
  constexpr int BC = kKeyTile;
  static_assert(BC == 32, "the softmax step maps one key per lane");
  extern __shared__ float smem[];
  const int R = p.rows, DK = p.dk, DV = p.dv, ldk = DK + 1;
  float* Qs = smem;                                // [R][DK+1]  q * scale
  float* Ks = Qs + R * ldk;                        // [BC][DK+1]
  float* Vs = Ks + BC * ldk;                       // [BC][DV]
  float* Ss = Vs + BC * DV;                        // [R][BC+1]  scores, then probabilities
  float* Os = Ss + R * (BC + 1);                   // [R][DV]    unnormalised output
  float* row_m = Os + R * DV;                      // running max
  float* row_l = row_m + R;                        // running sum of exp
  float* row_a = row_l + R;                        // rescale factor of the current tile
  int* row_t = reinterpret_cast<int*>(row_a + R);  // query of the row, -1 = padding
  int* row_hq = row_t + R;                         // query head of the row

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const int tid = threadIdx.x;
  const QueryCta cta(p);
  const int b = cta.b, g = cta.g, t0 = cta.t0, t_last = cta.t_last;

  for (int r = tid; r < R; r += blockDim.x) {
    row_t[r] = cta.row(p, r, &row_hq[r]);
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

  for (int seg = 0; seg < simt::n_segments<BR>(p); ++seg) {
    int lo, hi;
    simt::segment_range<BR>(p, b, g, t0, t_last, seg, &lo, &hi);
    for (int kt = lo; kt < hi; kt += BC) {
      // 1. Load the K/V tile (zeros past the segment's end).
      simt::load_kv_tile(Ks, ldk, Vs, DV, k, v, b, g, p.Sk, p.G, DK, DV, kt, hi, BC);
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
      // 3. Online softmax, one warp per row; 4. O = O * alpha + P V.
      simt::online_softmax_rows(Ss, BC + 1, row_m, row_l, row_a, R);
      __syncthreads();
      simt::rescale_accumulate_pv(Os, Ss, BC + 1, Vs, row_a, R, DV, BC);
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

NSA_V1_BRANCH_KERNELS(fwd, attn_fwd_body)

}  // namespace

void launch_attention_fwd(Branch br, at::ScalarType dtype, AttnParams& p) {
  if (p.S == 0 || p.B == 0) return;
  if (launch_attention_fwd_tc(br, dtype, p)) return;  // v2 (tensor cores) where it tiles
  NSA_DISPATCH_FLOAT_TYPES(dtype, "attention forward",
                           [&] { launch_v1_query_kernel(br, p, fwd_smem_floats, fwd_kernels<scalar_t>()); });
}

}  // namespace nsa::cuda
