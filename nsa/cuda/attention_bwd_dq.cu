// Attention backward, dq, for the three NSA branches (one body, three names).
//
// Versions: v2 (tensor cores, fp16/bf16) in attention_bwd_tc.cu, tried first by
// launch_attention_bwd_dq below (NSA_CUDA_KERNEL_V1=1 forces v1); v1 here for
// fp32 and the head dims v2 does not tile. v1: SIMT fp32, flash-style recompute: the same query-centric
// tiling and key walk as the forward (attention_fwd.cu), with the saved
// logsumexp giving P = exp(s - lse) directly (no second softmax pass) and
// delta = rowsum(dO * O) giving dS = P * (dP - delta):
//     dq[r] = scale * sum_c dS[r][c] * k[c]
// Why query-centric: each dq row is owned by one CTA, so no atomics and the
// result is deterministic. dk/dv are the key-centric kernel's job
// (attention_bwd_dkdv.cu).
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
__device__ void attn_bwd_dq_body(const AttnParams& p) {
  constexpr int BC = kKeyTile;
  extern __shared__ float smem[];
  const int R = p.rows, DK = p.dk, DV = p.dv, ldk = DK + 1, ldv = DV + 1;
  float* Qs = smem;            // [R][DK+1]  q * scale
  float* dOs = Qs + R * ldk;   // [R][DV+1]
  float* Ks = dOs + R * ldv;   // [BC][DK+1]
  float* Vs = Ks + BC * ldk;   // [BC][DV+1]
  float* dQs = Vs + BC * ldv;  // [R][DK]    sum_c dS * k (scale applied at the end)
  float* Ss = dQs + R * DK;    // [R][BC+1]  dS
  float* row_lse = Ss + R * (BC + 1);
  float* row_delta = row_lse + R;
  int* row_t = reinterpret_cast<int*>(row_delta + R);
  int* row_hq = row_t + R;

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(p.dout);
  const int tid = threadIdx.x;
  const QueryCta cta(p);
  const int b = cta.b, g = cta.g, t0 = cta.t0, t_last = cta.t_last;

  for (int r = tid; r < R; r += blockDim.x) {
    const int t = cta.row(p, r, &row_hq[r]);
    const bool valid = t >= 0;
    row_t[r] = t;
    const int64_t ri = valid ? (int64_t(b) * p.S + t) * p.H + row_hq[r] : 0;
    row_lse[r] = valid ? p.lse[ri] : INFINITY;
    row_delta[r] = valid ? p.delta[ri] : 0.f;
  }
  __syncthreads();
  for (int i = tid; i < R * DK; i += blockDim.x) {
    const int r = i / DK, d = i % DK, t = row_t[r];
    Qs[r * ldk + d] = t >= 0 ? to_f(q[row_offset(b, t, row_hq[r], p.S, p.H, DK) + d]) * p.scale : 0.f;
    dQs[i] = 0.f;
  }
  for (int i = tid; i < R * DV; i += blockDim.x) {
    const int r = i / DV, e = i % DV, t = row_t[r];
    dOs[r * ldv + e] = t >= 0 ? to_f(dout[row_offset(b, t, row_hq[r], p.S, p.H, DV) + e]) : 0.f;
  }
  __syncthreads();

  for (int seg = 0; seg < simt::n_segments<BR>(p); ++seg) {
    int lo, hi;
    simt::segment_range<BR>(p, b, g, t0, t_last, seg, &lo, &hi);
    for (int kt = lo; kt < hi; kt += BC) {
      // 1. Load the K/V tile.
      simt::load_kv_tile(Ks, ldk, Vs, ldv, k, v, b, g, p.Sk, p.G, DK, DV, kt, hi, BC);
      __syncthreads();
      // 2. dS = P * (dO.v - delta), P = exp(q.k*scale - lse); 0 where invisible.
      for (int i = tid; i < R * BC; i += blockDim.x) {
        const int r = i / BC, c = i % BC, key = kt + c, t = row_t[r];
        float ds = 0.f;
        if (t >= 0 && key < hi && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride)) {
          float s = 0.f, dp = 0.f;
          for (int d = 0; d < DK; ++d) s += Qs[r * ldk + d] * Ks[c * ldk + d];
          for (int e = 0; e < DV; ++e) dp += dOs[r * ldv + e] * Vs[c * ldv + e];
          ds = expf(s - row_lse[r]) * (dp - row_delta[r]);
        }
        Ss[r * (BC + 1) + c] = ds;
      }
      __syncthreads();
      // 3. dQ += dS K.
      for (int i = tid; i < R * DK; i += blockDim.x) {
        const int r = i / DK, d = i % DK;
        float acc = dQs[i];
        for (int c = 0; c < BC; ++c) acc += Ss[r * (BC + 1) + c] * Ks[c * ldk + d];
        dQs[i] = acc;
      }
      __syncthreads();
    }
  }

  T* dq = static_cast<T*>(p.dq_out);
  for (int i = tid; i < R * DK; i += blockDim.x) {
    const int r = i / DK, d = i % DK, t = row_t[r];
    if (t >= 0) dq[row_offset(b, t, row_hq[r], p.S, p.H, DK) + d] = T(dQs[i] * p.scale);
  }
}

NSA_V1_BRANCH_KERNELS(bwd_dq, attn_bwd_dq_body)

}  // namespace

void launch_attention_bwd_dq(Branch br, at::ScalarType dtype, AttnParams& p) {
  if (p.S == 0 || p.B == 0) return;
  if (launch_attention_bwd_dq_tc(br, dtype, p)) return;  // v2 (tensor cores) where it tiles
  NSA_DISPATCH_FLOAT_TYPES(dtype, "attention backward (dq)",
                           [&] { launch_v1_query_kernel(br, p, dq_smem_floats, bwd_dq_kernels<scalar_t>()); });
}

}  // namespace nsa::cuda
