// The steps the SIMT (fp32, shared-memory) kernels share: v1 forward
// (attention_fwd.cu), v1 dq (attention_bwd_dq.cu) and decode
// (decode_attention.cu). One CTA holds R rows (query, head) and walks K/V tiles
// of kKeyTile = 32 keys, one key per lane in the softmax step. One copy of each
// step so the three kernels cannot drift apart in how they mask, rescale or
// read a tile; each kernel keeps its own loop and what it does with the tile.
#pragma once

#include "nsa/cuda/attention_common.cuh"

namespace nsa::cuda::simt {

// Load keys [kt, kt + BC) of KV group g into shared memory as fp32:
// K as [BC][ldk], V as [BC][ldv]; zeros for keys at or past `hi`.
template <typename T>
__device__ __forceinline__ void load_kv_tile(float* Ks, int ldk, float* Vs, int ldv, const T* k, const T* v, int b,
                                             int g, int n_keys, int G, int DK, int DV, int kt, int hi, int BC) {
  for (int i = threadIdx.x; i < BC * DK; i += blockDim.x) {
    const int c = i / DK, d = i % DK, key = kt + c;
    Ks[c * ldk + d] = key < hi ? to_f(k[row_offset(b, key, g, n_keys, G, DK) + d]) : 0.f;
  }
  for (int i = threadIdx.x; i < BC * DV; i += blockDim.x) {
    const int c = i / DV, e = i % DV, key = kt + c;
    Vs[c * ldv + e] = key < hi ? to_f(v[row_offset(b, key, g, n_keys, G, DV) + e]) : 0.f;
  }
}

// Segment `seg` of a query-centric CTA's keys [lo, hi): the one contiguous
// range of Window / Compressed for queries t0..t_last, or the seg-th chosen
// block of query t0 for Selected (q_tile = 1 there). n_segments() says how many.
template <Branch BR>
__device__ __forceinline__ int n_segments(const AttnParams& p) {
  return BR == Branch::Selected ? p.n_sel : 1;
}
template <Branch BR>
__device__ __forceinline__ void segment_range(const AttnParams& p, int b, int g, int t0, int t_last, int seg, int* lo,
                                              int* hi) {
  if (BR == Branch::Selected) {
    const int j = p.block_idx[(int64_t(b) * p.S + t0) * p.G * p.n_sel + g * p.n_sel + seg];
    selected_key_range(j, t0, p.Sk, p.sel_block, lo, hi);
  } else {
    contiguous_key_range(BR, t0, t_last, p.Sk, p.window, p.cmp_block, p.cmp_stride, lo, hi);
  }
}

// Online softmax over one tile of scores S [rows][ld] (ld >= 32; -inf where a
// key is invisible), one warp per row: the new running max m, the rescale
// factor a = e^(m_old - m_new) of what was accumulated so far, l = l * a +
// sum of e^(s - m_new), and S becomes those probabilities. A row that has seen
// only -inf keeps m = -inf and gets probabilities 0 and a = 1: never a NaN.
__device__ __forceinline__ void online_softmax_rows(float* Ss, int ld, float* row_m, float* row_l, float* row_a,
                                                    int rows) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  for (int r = warp; r < rows; r += nwarps) {
    const float s = Ss[r * ld + lane];
    const float m_old = row_m[r];
    const float m_new = fmaxf(m_old, warp_max(s));
    const float pr = (s == -INFINITY) ? 0.f : expf(s - m_new);  // all -inf -> 0
    const float sum = warp_sum(pr);
    Ss[r * ld + lane] = pr;
    __syncwarp();  // every lane has read row_m[r] before lane 0 rewrites it
    if (lane == 0) {
      const float alpha = (m_new == -INFINITY) ? 1.f : expf(m_old - m_new);
      row_a[r] = alpha;
      row_m[r] = m_new;
      row_l[r] = row_l[r] * alpha + sum;
    }
  }
}

// O = O * a + P V for R rows: O [rows][DV], P [rows][ld] (BC keys), V [BC][DV].
__device__ __forceinline__ void rescale_accumulate_pv(float* Os, const float* Ss, int ld, const float* Vs,
                                                      const float* row_a, int rows, int DV, int BC) {
  for (int i = threadIdx.x; i < rows * DV; i += blockDim.x) {
    const int r = i / DV, e = i % DV;
    float acc = Os[i] * row_a[r];
    for (int c = 0; c < BC; ++c) acc += Ss[r * ld + c] * Vs[c * DV + e];
    Os[i] = acc;
  }
}

}  // namespace nsa::cuda::simt
