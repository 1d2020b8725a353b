// Attention backward dq v2: tensor cores (mma.sync m16n8k16, fp32
// accumulators) for fp16 / bf16 inputs, for the three NSA branches. v1
// (attention_bwd_dq.cu) stays the kernel for fp32 and the head dims v2 does not
// tile; launch_attention_bwd_dq picks (NSA_CUDA_KERNEL_V1=1 forces v1). dk/dv
// v2 is attention_bwd_dkdv_tc.cu.
//
// Same tiling as the forward v2 (attention_fwd_tc.cu; header comment there):
// 64 rows (queries x heads) per CTA, 4 warps x 16 rows, for every branch; Window /
// Compressed walk one contiguous key range, Selected the union of the blocks
// the CTA's queries chose (each block's K/V loaded once for all of them).
// At long sequences Selected runs KeyOuter's dq instead (selected_key_outer.cu:
// each chosen block's K/V once for every query that chose it; launch.cuh,
// selected_key_outer).
// K/V tiles of 64 keys double-buffered with cp.async; 36-100 KB of shared
// memory (2 x 64 x (dk + dv + 16) x 2 bytes), 128 threads.
//
// Per warp and per 32-key step (16 at dk = 192) of a tile, so S and dP take few
// registers next to Q, dO and the dq accumulators:
//   S  = Q K^T, dP = dO V^T            tensor cores (Q, dO in registers)
//   P  = 2^(S * scale * log2 e - lse * log2 e)   from the forward's lse, fp32;
//                                      0 where the key is invisible; a row with
//                                      lse = +inf (saw no key) gets P = 0
//   dS = P (dP - delta)                delta = rowsum(dO * O), fp32
//   dQ += dS K                         dS rounded to the input dtype, K via
//                                      ldmatrix.trans
// and dq = scale * dQ in the input dtype. Each row is owned by one warp and its
// keys come in a fixed order: deterministic, no atomics.
// Registers: Q (dk/4) + dO (dv/4) + dq (dk/2) per thread; at dk = 192 the
// Window / Compressed kernels sit at the 255 cap with 8-32 bytes of spill
// (ptxas -v, CUDA 13.0); at 64/64 Window / Compressed ask for 4 CTAs per SM
// (128 registers; min_ctas_per_sm, launch.cuh), Selected for 3 (168: its union
// walk spilled 148 bytes at 128); the rest have none.
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <atomic>
#include <climits>
#include <type_traits>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/query_tiles.cuh"

namespace nsa::cuda {
namespace {

using tc::kLog2e;
using tc::kTcKeys;
using tc::kTcRowsWin;
using tc::kTcThreads;
using tc::kTcWarps;
// Keys per step of a warp in Window / Compressed: 32 (S and dP take 16
// registers each), 16 at dk = 192 where Q (48) and dq (96) leave less room.
template <int DK>
constexpr int step_keys() {
  return DK >= 192 ? 16 : 32;
}

template <int DK, int DV>
using DqLayout = tc::QueryTiledLayout<DK, DV>;

// One warp's 16 rows: Q and dO as A fragments, the dq accumulators, and the
// rows' lse (log2 domain, +inf for padding or a row that saw nothing) and delta.
template <int DK, int DV>
struct DqRows {
  uint32_t q[DK / 16][4];
  uint32_t dout[DV / 16][4];
  float dq[DK / 8][4];
  float lse2[2], delta[2];
};

template <typename T, int DK, int DV>
__device__ __forceinline__ void init_dq_rows(DqRows<DK, DV>& w, const AttnParams& p, int b, int t0, int hq0,
                                             bool valid0, int t1, int hq1, bool valid1, int tig) {
  const T* q = static_cast<const T*>(p.q);
  const T* dout = static_cast<const T*>(p.dout);
  tc::load_a_frags<T, DK>(w.q, q + row_offset(b, t0, hq0, p.S, p.H, DK), valid0,
                          q + row_offset(b, t1, hq1, p.S, p.H, DK), valid1, tig);
  tc::load_a_frags<T, DV>(w.dout, dout + row_offset(b, t0, hq0, p.S, p.H, DV), valid0,
                          dout + row_offset(b, t1, hq1, p.S, p.H, DV), valid1, tig);
#pragma unroll
  for (int n = 0; n < DK / 8; ++n) w.dq[n][0] = w.dq[n][1] = w.dq[n][2] = w.dq[n][3] = 0.f;
  const int64_t i0 = (int64_t(b) * p.S + t0) * p.H + hq0, i1 = (int64_t(b) * p.S + t1) * p.H + hq1;
  w.lse2[0] = valid0 ? p.lse[i0] * kLog2e : INFINITY;
  w.lse2[1] = valid1 ? p.lse[i1] * kLog2e : INFINITY;
  w.delta[0] = valid0 ? p.delta[i0] : 0.f;
  w.delta[1] = valid1 ? p.delta[i1] : 0.f;
}

// dQ += dS K for NK keys at shared rows kr0.. of the stage; `visible(n, j)`
// says whether accumulator element (n, j) of S is a visible (row, key) pair.
template <typename T, int DK, int DV, int NK, int LDK, int LDV, typename Visible>
__device__ __forceinline__ void dq_step(DqRows<DK, DV>& w, const T* Ks, const T* Vs, int kr0, int lane,
                                        float scale_log2, const Visible& visible) {
  float s[NK / 8][4], dp[NK / 8][4];
  tc::warp_a_bt<T, DK, NK, LDK>(s, w.q, Ks, kr0, lane);
  tc::warp_a_bt<T, DV, NK, LDV>(dp, w.dout, Vs, kr0, lane);
#pragma unroll
  for (int n = 0; n < NK / 8; ++n) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float pr = visible(n, j) ? tc::exp2_ftz(fmaf(s[n][j], scale_log2, -w.lse2[j / 2])) : 0.f;
      s[n][j] = pr * (dp[n][j] - w.delta[j / 2]);  // dS
    }
  }
  tc::warp_c_b<T, DK, NK, LDK>(w.dq, s, Ks, kr0, lane);
}

// Selected with split keys: the 4 warps hold partial dq of the same 16 rows;
// sum them through shared memory (the K/V stages are free: the key walk ended
// on a barrier with no copy in flight) in warp order, and write.
template <typename T, int DK, int DV>
__device__ __forceinline__ void sum_and_write_dq(const AttnParams& p, unsigned char* smem, const tc::TcThread& cta,
                                                 const DqRows<DK, DV>& w) {
  constexpr int kLdQ = DK + 8;
  static_assert(size_t(kTcWarps) * 16 * kLdQ * sizeof(float) <= tc::KvStages<DK, DV>::kBytes,
                "the reduction area must fit in the K/V stages");
  float* red = reinterpret_cast<float*>(smem);  // [4][16][kLdQ]
  tc::stash_warp_rows<DK, kLdQ>(red, w.dq, cta);
  __syncthreads();
  T* dq = static_cast<T*>(p.dq_out);
  tc::for_each_merged_pair<DK>(p, cta, [&](int r, int c, int t, int hq) {
    float d0 = 0.f, d1 = 0.f;
#pragma unroll
    for (int ww = 0; ww < kTcWarps; ++ww) {
      d0 += red[(ww * 16 + r) * kLdQ + c];
      d1 += red[(ww * 16 + r) * kLdQ + c + 1];
    }
    *reinterpret_cast<uint32_t*>(dq + row_offset(cta.b, t, hq, p.S, p.H, DK) + c) =
        tc::pack2<T>(d0 * p.scale, d1 * p.scale);
  });
}

// ---- queries x heads per CTA, every branch ------------------------------------------
// Its first lines repeat tc_fwd_rows_body's on purpose: the same CTA, rows and
// key walk, so a forward and its gradient see the same keys; they part at the
// tile's arithmetic.
template <typename T, int DK, int DV, Branch BR>
__device__ __forceinline__ void tc_dq_rows_body(const AttnParams& p) {
  using L = DqLayout<DK, DV>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const tc::TcThread cta(p);
  const tc::WarpQueryRows rows = tc::warp_rows<BR>(p, cta);
  const int b = cta.b, lane = cta.lane, tig = cta.tig, tr0 = rows.t[0], tr1 = rows.t[1];
  const int hq0 = rows.hq[0], hq1 = rows.hq[1];
  DqRows<DK, DV> w;
  init_dq_rows<T, DK, DV>(w, p, b, imax(tr0, 0), hq0, tr0 >= 0, imax(tr1, 0), hq1, tr1 >= 0, tig);
  const float scale_log2 = p.scale * kLog2e;
  tc::walk_keys<T, DK, DV, BR, L>(p, smem_raw, cta, rows, [&](const T* ks, const T* vs, const auto& view) {
    constexpr int NK = std::decay_t<decltype(view)>::kCols;
    constexpr int kStep = step_keys<DK>() < NK ? step_keys<DK>() : NK;
#pragma unroll
    for (int kr0 = 0; kr0 < NK; kr0 += kStep) {
      if (kr0 >= view.n_cols()) break;  // the rest of the tile is past the end
      const int c0 = kr0 + 2 * tig;
      if (view.all) {  // the warp sees the whole tile (warp-uniform): no per-element test
        dq_step<T, DK, DV, kStep, L::kLdK, L::kLdV>(w, ks, vs, kr0, lane, scale_log2, [](int, int) { return true; });
      } else {
        tc::with_visibility(view, tr0, tr1, [&](const auto& visible) {
          dq_step<T, DK, DV, kStep, L::kLdK, L::kLdV>(
              w, ks, vs, kr0, lane, scale_log2, [&](int n, int j) { return visible(j / 2, c0 + n * 8 + (j & 1)); });
        });
      }
    }
  });
  if (tc::splits_keys<BR>(p)) {
    sum_and_write_dq<T, DK, DV>(p, smem_raw, cta, w);
    return;
  }

  T* dq = static_cast<T*>(p.dq_out);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int t = i == 0 ? tr0 : tr1, hq = i == 0 ? hq0 : hq1;
    if (t < 0) continue;
    T* row = dq + row_offset(b, t, hq, p.S, p.H, DK);
#pragma unroll
    for (int n = 0; n < DK / 8; ++n) {
      *reinterpret_cast<uint32_t*>(row + n * 8 + 2 * tig) =
          tc::pack2<T>(w.dq[n][2 * i] * p.scale, w.dq[n][2 * i + 1] * p.scale);
    }
  }
}

NSA_TC_BRANCH_KERNELS(bwd_dq, tc_dq_rows_body, TcFamily::Dq)

std::atomic<int> g_last_dq_columns{0};
std::atomic<int> g_last_dq_key_outer{0};

struct LaunchDq {
  template <typename T, int DK, int DV>
  static bool run(Branch br, AttnParams& p) {
    const bool key_outer = br == Branch::Selected && selected_key_outer(p, /*dq=*/true);
    g_last_dq_key_outer.store(key_outer ? 1 : 0);
    const bool columns = !key_outer && br == Branch::Selected && selected_query_columns(p);
    g_last_dq_columns.store(columns ? 1 : 0);
    if (key_outer)
      launch_selected_key_outer_dq<T, DK, DV>(p);
    else if (columns)
      launch_selected_columns<T, DK, DV>(p, /*dq=*/true);
    else
      launch_tc_query_kernel<DqLayout<DK, DV>>(br, p, bwd_dq_tc_kernels<T, DK, DV>());
    return true;
  }
};

std::atomic<int> g_last_dq_version{0};

}  // namespace

int last_dq_kernel_version() { return g_last_dq_version.load(); }
bool last_dq_used_query_columns() { return g_last_dq_version.load() == 2 && g_last_dq_columns.load() == 1; }
bool last_dq_used_key_outer() { return g_last_dq_version.load() == 2 && g_last_dq_key_outer.load() == 1; }

bool launch_attention_bwd_dq_tc(Branch br, at::ScalarType dtype, AttnParams& p) {
  return launch_v2_or_decline<LaunchDq>(br, dtype, p, {p.k, p.v, p.q, p.dout, p.dq_out}, g_last_dq_version);
}

}  // namespace nsa::cuda
