// Attention backward dq v2: tensor cores (mma.sync m16n8k16, fp32
// accumulators) for fp16 / bf16 inputs, for the three NSA branches. v1
// (attention_bwd_dq.cu) stays the kernel for fp32 and the head dims v2 does not
// tile; launch_attention_bwd_dq picks (NSA_CUDA_KERNEL_V1=1 forces v1). dk/dv
// v2 is attention_bwd_dkdv_tc.cu.
//
// Same tiling as the forward v2 (attention_fwd_tc.cu; header comment there):
// Window / Compressed 64 rows (queries x heads) per CTA, 4 warps x 16 rows, one
// contiguous key range; Selected one query x up to 16 heads, the chosen blocks
// concatenated into one virtual key list, each warp taking 16 of every 64 keys.
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
// and dq = scale * dQ in the input dtype. Selected sums its 4 warps' partial dq
// through shared memory in warp order: deterministic, no atomics.
// Registers: Q (dk/4) + dO (dv/4) + dq (dk/2) per thread; at dk = 192 the
// Window / Compressed kernels sit at the 255 cap with 8-32 bytes of spill
// (ptxas -v, CUDA 13.0); every other instantiation has none.
#include <atomic>
#include <climits>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {
namespace {

using tc::kLog2e;
using tc::kTcKeys;
using tc::kTcRowsSel;
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
struct DqLayout {
  static constexpr int kLdK = tc::KvStages<DK, DV>::kLdK, kLdV = tc::KvStages<DK, DV>::kLdV;
  static constexpr size_t kKvBytes = tc::KvStages<DK, DV>::kBytes;
  // Selected's sum of the 4 warps' partial dq [4][16][DK + 8] floats, aliasing
  // the K/V stages once the key loop is over.
  static constexpr int kLdQ = DK + 8;
  static constexpr size_t kMergeBytes = size_t(kTcWarps) * kTcRowsSel * kLdQ * sizeof(float);
  static constexpr size_t kSelSegOffset = kKvBytes > kMergeBytes ? kKvBytes : kMergeBytes;
  static size_t selected_bytes(int n_sel) { return kSelSegOffset + size_t(2 * n_sel + 1) * sizeof(int); }
};

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
      const float pr = visible(n, j) ? exp2f(s[n][j] * scale_log2 - w.lse2[j / 2]) : 0.f;
      s[n][j] = pr * (dp[n][j] - w.delta[j / 2]);  // dS
    }
  }
  tc::warp_c_b<T, DK, NK, LDK>(w.dq, s, Ks, kr0, lane);
}

// ---- Window / Compressed ----------------------------------------------------------
template <typename T, int DK, int DV, Branch BR>
__device__ __forceinline__ void tc_dq_rows_body(const AttnParams& p) {
  using L = DqLayout<DK, DV>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);  // [2][kTcKeys][kLdK]
  T* Vs = Ks + 2 * kTcKeys * L::kLdK;      // [2][kTcKeys][kLdV]
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  const int n_chunks = ceil_div(p.h, p.head_chunk);
  const int bg = blockIdx.y / n_chunks, chunk = blockIdx.y % n_chunks;
  const int b = bg / p.G, g = bg % p.G;
  const int t0 = blockIdx.x * p.q_tile;
  const int t_last = imin(t0 + p.q_tile, p.S) - 1;

  const auto row_query = [&](int r, int* hq) {
    const int qi = r / p.head_chunk, head = chunk * p.head_chunk + r % p.head_chunk;
    *hq = g * p.h + imin(head, p.h - 1);
    return (qi < p.q_tile && t0 + qi < p.S && head < p.h) ? t0 + qi : -1;  // -1: padding row
  };
  int hq0, hq1;
  const int tr0 = row_query(warp * 16 + gid, &hq0), tr1 = row_query(warp * 16 + gid + 8, &hq1);
  int tmin = INT_MAX, tmax = -1;
  for (int r = warp * 16; r < warp * 16 + 16; ++r) {
    int hq;
    const int t = row_query(r, &hq);
    if (t >= 0) tmin = imin(tmin, t), tmax = imax(tmax, t);
  }
  const bool warp_active = tmax >= 0;

  DqRows<DK, DV> w;
  init_dq_rows<T, DK, DV>(w, p, b, imax(tr0, 0), hq0, tr0 >= 0, imax(tr1, 0), hq1, tr1 >= 0, tig);
  const float scale_log2 = p.scale * kLog2e;

  int lo, hi;
  contiguous_key_range(BR, t0, t_last, p.Sk, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
  const int n_tiles = ceil_div(hi - lo, kTcKeys);
  const auto issue_tile = [&](int i) {
    const int stage = i & 1, r = tid / 2, key = lo + i * kTcKeys + r;
    const bool valid = key < hi;
    const int src = valid ? key : lo;  // any real row: nothing is read when !valid
    T* kdst = Ks + (stage * kTcKeys + r) * L::kLdK;
    T* vdst = Vs + (stage * kTcKeys + r) * L::kLdV;
    tc::copy_row_async<DK>(kdst, k + row_offset(b, src, g, p.Sk, p.G, DK), valid, tid & 1);
    tc::copy_row_async<DV>(vdst, v + row_offset(b, src, g, p.Sk, p.G, DV), valid, tid & 1);
    tc::cp_async_commit();
  };

  if (n_tiles > 0) issue_tile(0);
  for (int i = 0; i < n_tiles; ++i) {
    if (i + 1 < n_tiles) {
      issue_tile(i + 1);
      tc::cp_async_wait<1>();
    } else {
      tc::cp_async_wait<0>();
    }
    __syncthreads();
    const int kt = lo + i * kTcKeys, kend = imin(kt + kTcKeys, hi);
    bool none, all;  // the warp sees none / all of the tile (warp-uniform)
    if (BR == Branch::Window) {
      none = kt > tmax || kend - 1 <= tmin - p.window;
      all = kend == kt + kTcKeys && kend - 1 <= tmin && kt > tmax - p.window;
    } else {
      none = kt >= n_cmp_visible(tmax, p.cmp_block, p.cmp_stride);
      all = kend == kt + kTcKeys && kend <= n_cmp_visible(tmin, p.cmp_block, p.cmp_stride);
    }
    if (warp_active && !none) {
      const T* ks = Ks + (i & 1) * kTcKeys * L::kLdK;
      const T* vs = Vs + (i & 1) * kTcKeys * L::kLdV;
      constexpr int kStep = step_keys<DK>();
#pragma unroll
      for (int kr0 = 0; kr0 < kTcKeys; kr0 += kStep) {
        if (kt + kr0 >= kend) break;  // the rest of the tile is past the range
        const int k0 = kt + kr0 + 2 * tig, window = p.window, cmp_block = p.cmp_block, cmp_stride = p.cmp_stride;
        const auto visible = [=](int n, int j) {
          const int key = k0 + n * 8 + (j & 1), t = j < 2 ? tr0 : tr1;
          return all || (t >= 0 && key < hi && key_visible(BR, t, key, window, cmp_block, cmp_stride));
        };
        dq_step<T, DK, DV, kStep, L::kLdK, L::kLdV>(w, ks, vs, kr0, lane, scale_log2, visible);
      }
    }
    __syncthreads();
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

// ---- Selected -----------------------------------------------------------------
template <typename T, int DK, int DV>
__device__ __forceinline__ void tc_dq_selected_body(const AttnParams& p) {
  using L = DqLayout<DK, DV>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);
  T* Vs = Ks + 2 * kTcKeys * L::kLdK;
  int* seg_start = reinterpret_cast<int*>(smem_raw + L::kSelSegOffset);  // [n + 1] virtual offsets
  int* seg_lo = seg_start + p.n_sel + 1;                                  // [n] first key of segment
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  const int n_chunks = ceil_div(p.h, p.head_chunk);
  const int bg = blockIdx.y / n_chunks, chunk = blockIdx.y % n_chunks;
  const int b = bg / p.G, g = bg % p.G;
  const int t = blockIdx.x;

  // The query's segments, as in the forward.
  const int* idx = p.block_idx + (int64_t(b) * p.S + t) * p.G * p.n_sel + int64_t(g) * p.n_sel;
  for (int s = tid; s < p.n_sel; s += kTcThreads) {
    int lo, hi;
    selected_key_range(idx[s], t, p.Sk, p.sel_block, &lo, &hi);
    seg_lo[s] = lo;
    seg_start[s + 1] = hi - lo;
  }
  __syncthreads();
  if (tid == 0) {
    seg_start[0] = 0;
    for (int s = 0; s < p.n_sel; ++s) seg_start[s + 1] += seg_start[s];
  }
  __syncthreads();
  const int n_keys = seg_start[p.n_sel];
  const int n_tiles = ceil_div(n_keys, kTcKeys);

  const int head0 = chunk * p.head_chunk + gid, head1 = head0 + 8;
  const bool valid0 = gid < p.head_chunk && head0 < p.h, valid1 = gid + 8 < p.head_chunk && head1 < p.h;
  const int hq0 = g * p.h + imin(head0, p.h - 1), hq1 = g * p.h + imin(head1, p.h - 1);
  DqRows<DK, DV> w;
  init_dq_rows<T, DK, DV>(w, p, b, t, hq0, valid0, t, hq1, valid1, tig);
  const float scale_log2 = p.scale * kLog2e;

  int cursor = 0;
  const auto issue_tile = [&](int i) {
    const int stage = i & 1, r = tid / 2, pos = i * kTcKeys + r;
    while (cursor < p.n_sel && pos >= seg_start[cursor + 1]) ++cursor;
    const bool valid = pos < n_keys;
    const int key = valid ? seg_lo[cursor] + (pos - seg_start[cursor]) : 0;
    T* kdst = Ks + (stage * kTcKeys + r) * L::kLdK;
    T* vdst = Vs + (stage * kTcKeys + r) * L::kLdV;
    tc::copy_row_async<DK>(kdst, k + row_offset(b, key, g, p.Sk, p.G, DK), valid, tid & 1);
    tc::copy_row_async<DV>(vdst, v + row_offset(b, key, g, p.Sk, p.G, DV), valid, tid & 1);
    tc::cp_async_commit();
  };

  if (n_tiles > 0) issue_tile(0);
  for (int i = 0; i < n_tiles; ++i) {
    if (i + 1 < n_tiles) {
      issue_tile(i + 1);
      tc::cp_async_wait<1>();
    } else {
      tc::cp_async_wait<0>();
    }
    __syncthreads();
    const int pos0 = i * kTcKeys + warp * 16;  // this warp's 16-key slice
    if (pos0 < n_keys) {
      const auto visible = [=](int n, int j) { return pos0 + n * 8 + 2 * tig + (j & 1) < n_keys; };
      dq_step<T, DK, DV, 16, L::kLdK, L::kLdV>(w, Ks + (i & 1) * kTcKeys * L::kLdK,
                                               Vs + (i & 1) * kTcKeys * L::kLdV, warp * 16, lane, scale_log2,
                                               visible);
    }
    __syncthreads();
  }

  // Sum the 4 warps' partial dq in warp order (the stages are free now).
  float* red = reinterpret_cast<float*>(smem_raw);  // [4][16][kLdQ]
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float* row = red + (warp * kTcRowsSel + gid + 8 * i) * L::kLdQ;
#pragma unroll
    for (int n = 0; n < DK / 8; ++n) {
      row[n * 8 + 2 * tig] = w.dq[n][2 * i];
      row[n * 8 + 2 * tig + 1] = w.dq[n][2 * i + 1];
    }
  }
  __syncthreads();
  T* dq = static_cast<T*>(p.dq_out);
  for (int e = tid; e < kTcRowsSel * DK / 2; e += kTcThreads) {
    const int r = e / (DK / 2), c = 2 * (e % (DK / 2));
    const int head = chunk * p.head_chunk + r;
    if (r >= p.head_chunk || head >= p.h) continue;
    float d0 = 0.f, d1 = 0.f;
#pragma unroll
    for (int ww = 0; ww < kTcWarps; ++ww) {
      d0 += red[(ww * kTcRowsSel + r) * L::kLdQ + c];
      d1 += red[(ww * kTcRowsSel + r) * L::kLdQ + c + 1];
    }
    *reinterpret_cast<uint32_t*>(dq + row_offset(b, t, g * p.h + head, p.S, p.H, DK) + c) =
        tc::pack2<T>(d0 * p.scale, d1 * p.scale);
  }
}

// Three names so a kernel trace tells the branches apart (kernel_registry.cpp).
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads) nsa_window_bwd_dq_tc_kernel(AttnParams p) {
  tc_dq_rows_body<T, DK, DV, Branch::Window>(p);
}
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads) nsa_compressed_bwd_dq_tc_kernel(AttnParams p) {
  tc_dq_rows_body<T, DK, DV, Branch::Compressed>(p);
}
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads) nsa_selected_bwd_dq_tc_kernel(AttnParams p) {
  tc_dq_selected_body<T, DK, DV>(p);
}

template <typename T, int DK, int DV>
bool launch_tc(Branch br, AttnParams& p) {
  return launch_tc_query_kernel<DqLayout<DK, DV>>(br, p, kTcThreads, kTcRowsWin, kTcRowsSel,
                                                   nsa_window_bwd_dq_tc_kernel<T, DK, DV>,
                                                   nsa_compressed_bwd_dq_tc_kernel<T, DK, DV>,
                                                   nsa_selected_bwd_dq_tc_kernel<T, DK, DV>);
}

// The (dk, dv) pairs v2 instantiates (as the forward).
#define NSA_TC_DQ_DIMS(X) \
  X(64, 64) X(64, 128) X(64, 192) X(128, 64) X(128, 128) X(128, 192) X(192, 64) X(192, 128) X(192, 192)

template <typename T>
bool launch_tc_dims(Branch br, AttnParams& p) {
  switch (p.dk * 1000 + p.dv) {
#define NSA_TC_CASE(DK, DV) \
  case DK * 1000 + DV: return launch_tc<T, DK, DV>(br, p);
    NSA_TC_DQ_DIMS(NSA_TC_CASE)
#undef NSA_TC_CASE
    default: return false;
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

std::atomic<int> g_last_dq_version{0};

bool try_launch(Branch br, at::ScalarType dtype, AttnParams& p) {
  if (force_v1_kernels()) return false;
  if (!aligned16(p.k) || !aligned16(p.v) || !aligned16(p.q) || !aligned16(p.dout) || !aligned16(p.dq_out))
    return false;
  if (dtype == at::kBFloat16) return launch_tc_dims<c10::BFloat16>(br, p);
  if (dtype == at::kHalf) return launch_tc_dims<c10::Half>(br, p);
  return false;  // fp32: v1
}

}  // namespace

int last_dq_kernel_version() { return g_last_dq_version.load(); }

bool launch_attention_bwd_dq_tc(Branch br, at::ScalarType dtype, AttnParams& p) {
  const bool launched = try_launch(br, dtype, p);
  g_last_dq_version.store(launched ? 2 : 1);  // false: the caller runs v1
  return launched;
}

}  // namespace nsa::cuda
