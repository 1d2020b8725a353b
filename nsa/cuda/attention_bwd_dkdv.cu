// Attention backward, dk and dv, for the three NSA branches (one body, three
// names). Key-centric and deterministic: no float atomics anywhere.
//
// Versions: v1 here, SIMT fp32; v2 (tensor cores, fp16/bf16, the same row sets and
// ownership) in attention_bwd_dkdv_tc.cu, tried first by launch_attention_bwd_dkdv.
// v1: One CTA owns a tile of key_tile keys of one KV
// group and streams, in chunks of R rows, every (query, head) row that can see
// one of its keys:
//     dv[c] += sum_r P[r][c] * dO[r]
//     dk[c] += sum_r dS[r][c] * (scale * q[r])
// with P = exp(scale q.k - lse) and dS = P * (dO.v - delta). The rows come from
//   Window      queries [k0, k1 - 1 + w)            (contiguous)
//   Compressed  queries [k0*d + l - 1, S)            (contiguous)
//   Selected    the reverse index: the queries that chose the selection block
//               holding the tile, ascending, built on the GPU by a stable sort
//               of block_idx (attention_launch.cpp). One CTA per (block, sub-tile).
// Every key is owned by exactly one CTA, which writes it even when no query saw
// it (zeros), so an unwritten gradient cannot hide. Summation order is fixed,
// so results are bitwise reproducible (NSA_CUDA_DETERMINISTIC is always true).
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/launch.cuh"

namespace nsa::cuda {
namespace {

template <typename T, Branch BR>
__device__ void attn_bwd_dkdv_body(const AttnParams& p) {
  extern __shared__ float smem[];
  const int R = p.rows, BK = p.key_tile, DK = p.dk, DV = p.dv, ldk = DK + 1, ldv = DV + 1;
  float* Ks = smem;                // [BK][DK+1]
  float* Vs = Ks + BK * ldk;       // [BK][DV+1]
  float* dKs = Vs + BK * ldv;      // [BK][DK]
  float* dVs = dKs + BK * DK;      // [BK][DV]
  float* Qs = dVs + BK * DV;       // [R][DK+1]  q * scale
  float* dOs = Qs + R * ldk;       // [R][DV+1]
  float* Ps = dOs + R * ldv;       // [R][BK+1]
  float* dSs = Ps + R * (BK + 1);  // [R][BK+1]
  float* row_lse = dSs + R * (BK + 1);
  float* row_delta = row_lse + R;
  int* row_t = reinterpret_cast<int*>(row_delta + R);

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(p.dout);
  const int tid = threadIdx.x;
  // This CTA's keys [k0, k1) and its query list.
  const KeyCta cta = KeyCta::make<BR>(p, BK);
  const int b = cta.b, g = cta.g, k0 = cta.k0, k1 = cta.k1, n_q = cta.n_q;
  if (k0 >= k1) return;  // a sub-tile past the end of the sequence: owns no key

  for (int i = tid; i < BK * DK; i += blockDim.x) {
    const int c = i / DK, d = i % DK, key = k0 + c;
    Ks[c * ldk + d] = key < k1 ? to_f(k[row_offset(b, key, g, p.Sk, p.G, DK) + d]) : 0.f;
    dKs[i] = 0.f;
  }
  for (int i = tid; i < BK * DV; i += blockDim.x) {
    const int c = i / DV, e = i % DV, key = k0 + c;
    Vs[c * ldv + e] = key < k1 ? to_f(v[row_offset(b, key, g, p.Sk, p.G, DV) + e]) : 0.f;
    dVs[i] = 0.f;
  }

  const int64_t n_rows = int64_t(n_q) * p.h;  // row = (query index, head)
  for (int64_t base = 0; base < n_rows; base += R) {
    __syncthreads();  // previous chunk's readers are done; first pass: tile loaded
    // 1. Load the chunk's rows.
    for (int r = tid; r < R; r += blockDim.x) {
      const int64_t ri = base + r;
      int t = -1;
      if (ri < n_rows) t = cta.query(int(ri / p.h));
      row_t[r] = t;
      const int64_t li = (int64_t(b) * p.S + imax(t, 0)) * p.H + g * p.h + int(ri % p.h);
      row_lse[r] = t >= 0 ? p.lse[li] : INFINITY;
      row_delta[r] = t >= 0 ? p.delta[li] : 0.f;
    }
    __syncthreads();
    for (int i = tid; i < R * DK; i += blockDim.x) {
      const int r = i / DK, d = i % DK, t = row_t[r];
      const int hq = g * p.h + int((base + r) % p.h);
      Qs[r * ldk + d] = t >= 0 ? to_f(q[row_offset(b, t, hq, p.S, p.H, DK) + d]) * p.scale : 0.f;
    }
    for (int i = tid; i < R * DV; i += blockDim.x) {
      const int r = i / DV, e = i % DV, t = row_t[r];
      const int hq = g * p.h + int((base + r) % p.h);
      dOs[r * ldv + e] = t >= 0 ? to_f(dout[row_offset(b, t, hq, p.S, p.H, DV) + e]) : 0.f;
    }
    __syncthreads();
    // 2. P and dS for every (row, key); 0 where invisible.
    for (int i = tid; i < R * BK; i += blockDim.x) {
      const int r = i / BK, c = i % BK, key = k0 + c, t = row_t[r];
      float pr = 0.f, ds = 0.f;
      if (t >= 0 && key < k1 && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride)) {
        float s = 0.f, dp = 0.f;
        for (int d = 0; d < DK; ++d) s += Qs[r * ldk + d] * Ks[c * ldk + d];
        for (int e = 0; e < DV; ++e) dp += dOs[r * ldv + e] * Vs[c * ldv + e];
        pr = expf(s - row_lse[r]);
        ds = pr * (dp - row_delta[r]);
      }
      Ps[r * (BK + 1) + c] = pr;
      dSs[r * (BK + 1) + c] = ds;
    }
    __syncthreads();
    // 3. dV += P^T dO, dK += dS^T (scale q).
    for (int i = tid; i < BK * DV; i += blockDim.x) {
      const int c = i / DV, e = i % DV;
      float acc = dVs[i];
      for (int r = 0; r < R; ++r) acc += Ps[r * (BK + 1) + c] * dOs[r * ldv + e];
      dVs[i] = acc;
    }
    for (int i = tid; i < BK * DK; i += blockDim.x) {
      const int c = i / DK, d = i % DK;
      float acc = dKs[i];
      for (int r = 0; r < R; ++r) acc += dSs[r * (BK + 1) + c] * Qs[r * ldk + d];
      dKs[i] = acc;
    }
  }
  __syncthreads();

  T* dk = static_cast<T*>(p.dk_out);
  T* dv = static_cast<T*>(p.dv_out);
  for (int i = tid; i < BK * DK; i += blockDim.x) {
    const int c = i / DK, d = i % DK, key = k0 + c;
    if (key < k1) dk[row_offset(b, key, g, p.Sk, p.G, DK) + d] = T(dKs[i]);
  }
  for (int i = tid; i < BK * DV; i += blockDim.x) {
    const int c = i / DV, e = i % DV, key = k0 + c;
    if (key < k1) dv[row_offset(b, key, g, p.Sk, p.G, DV) + e] = T(dVs[i]);
  }
}

NSA_V1_BRANCH_KERNELS(bwd_dkdv, attn_bwd_dkdv_body)

template <typename T>
void launch(Branch br, AttnParams& p) {
  choose_key_tiling(p);
  const size_t smem = dkdv_smem_floats(p.rows, p.key_tile, p.dk, p.dv) * sizeof(float);
  const int n_tiles =
      br == Branch::Selected ? p.n_blocks * ceil_div(p.sel_block, p.key_tile) : ceil_div(p.Sk, p.key_tile);
  const dim3 grid(n_tiles, p.B * p.G);
  launch_kernel(bwd_dkdv_kernels<T>().pick(br), grid, kThreads, smem, p);
}

}  // namespace

bool launch_attention_bwd_dkdv_tc(Branch br, at::ScalarType dtype, AttnParams& p);  // attention_bwd_dkdv_tc.cu

void launch_attention_bwd_dkdv(Branch br, at::ScalarType dtype, AttnParams& p) {
  if (p.Sk == 0 || p.B == 0) return;
  if (launch_attention_bwd_dkdv_tc(br, dtype, p)) return;  // v2 (tensor cores) where it tiles
  NSA_DISPATCH_FLOAT_TYPES(dtype, "attention backward (dk, dv)", [&] { launch<scalar_t>(br, p); });
}

}  // namespace nsa::cuda
