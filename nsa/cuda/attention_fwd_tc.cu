// Attention forward v2: tensor cores (mma.sync m16n8k16, fp32 accumulators)
// for fp16 / bf16 inputs, FlashAttention-2 style, for the three NSA branches.
// v1 (attention_fwd.cu) stays the kernel for fp32 and for head dims v2 does not
// tile; launch_attention_fwd picks (set_force_v1_kernels, which the layer sets
// from the NSA_CUDA_KERNEL_V1 flag, forces v1 everywhere).
//
// What one warp does (the same in every v2 kernel): it owns 16 rows (a row =
// one (query, head) pair) whose Q sits in registers as mma A fragments for the
// whole kernel. For each K/V tile staged in shared memory it computes
//   S = Q K^T            tensor cores, fp32 accumulators (ldmatrix of K rows)
//   S masked             per (query, key) to -inf
//   online softmax       fp32, log2 domain: running max m of S * scale*log2e,
//                        rescale alpha = 2^(m_old - m_new), P = 2^(S * scale*log2e
//                        - m) as one FFMA + ex2.approx.ftz; row max over the 4
//                        lanes of a row
//   O = O * alpha + P V  P rounded to the input dtype straight from the S
//                        accumulators (C layout == A layout), V via ldmatrix.trans
// and at the end writes o = O / l in the input dtype and the fp32 logsumexp
// lse = (m + log2 l) * ln 2 (natural log, as v1), or o = 0 and lse = +inf when
// the row saw no key. A row that has seen nothing keeps m = -inf; exponents are
// taken against 0 then, so no -inf - -inf ever makes a NaN.
//
// Tiling (group-centric as in the paper: the M dimension of a CTA is queries x
// heads of one KV group, so every head of the group shares each K/V tile), the
// same for the three branches: 128 threads = 4 warps x 16 rows = 64 rows per
// CTA, q_tile = 64 / h consecutive queries x all h heads (h = 6: 10 queries, 4
// padding rows; h = 16: 4 queries; h >= 64: one query x 64-head chunks).
//   Window / Compressed  The CTA walks one contiguous key range
//                        (contiguous_key_range) in tiles of 64 keys; a warp skips
//                        a tile none of its rows sees and masks only tiles its
//                        rows see partly (per-element key_visible).
//   Selected             The CTA walks the union of the blocks its queries chose
//                        (query_tiles.cuh: a 64-bit mask of choosers per block,
//                        listed ascending), concatenated into one virtual key
//                        list so a 64-key tile is full whatever sel_block is.
//                        Each chosen block's K/V is loaded once for all the CTA's
//                        queries instead of once per query: consecutive queries
//                        share the forced blocks (0, the current and the previous
//                        one) and, in a trained model, most of the rest. Two
//                        tilings (launch.cuh, selected_split_keys): SharedRows =
//                        the 64 rows above, a warp skipping tiles none of its
//                        queries chose (few candidate blocks: the union stays
//                        small); SplitKeys = 16 rows (16 / h queries) held by all
//                        4 warps, each taking 16 keys of every tile, partial
//                        (m, l, O) merged through shared memory at the end (many
//                        candidates: no warp waits on another's tile). A tile
//                        every query of a warp chose, all keys within reach,
//                        skips the per-element test (SelectedTile::all); with
//                        sel_block a multiple of 64 a tile lies in one block
//                        and each row's visible columns are one span
//                        (tc::with_visibility). The
//                        one-query-per-CTA tiling they replace filled h of 16 mma
//                        rows (6 for m7c_125m) and read each block once per query.
//   K/V stages           64 keys x (dk + 8) and 64 x (dv + 8) 16-bit elements,
//                        double-buffered with 16-byte cp.async (the next tile loads
//                        while this one computes). The +8 pad (16 bytes) puts the 8
//                        rows an ldmatrix reads in 8 different bank groups.
// Shared memory per CTA = 2 stages x 64 x (dk + dv + 16) x 2 bytes: 36 KB at
// dk = dv = 64, 84 KB at 192/128, 100 KB at 192/192 (the largest v2 tiles), all
// under kSmemBudget = 112 KB, so sm_80 runs them and sm_90 fits 2 CTAs per SM.
// Selected adds its block union (SelectedUnionSmem: 14 KB, passes of 1024 blocks; 7 KB and 512 at 192/192). Registers per thread at
// 192/192: Q 48 + O 96 + S 32 (Window/Compressed); launch bounds 128 threads,
// and at 64/64 at least 4 CTAs per SM (min_ctas_per_sm, launch.cuh: 128 registers where
// the compiler chose 131-136, 0-32 bytes of spill; the selected forward at the
// m7c training shape went from 0.83 to 0.64 ms with the tile skip below).
//
// Head dims v2 instantiates: dk, dv in {64, 128, 192} (all 9 pairs). Others (16,
// 32, ..., 256) run v1; that is a tiling choice, the result is the same function.
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/query_tiles.cuh"
#include "nsa/cuda/wgmma.cuh"

namespace nsa::cuda {
namespace {

using tc::kLn2;
using tc::kLog2e;
using tc::kTcKeys;
using tc::kTcRowsWin;
using tc::kTcThreads;
using tc::kTcWarps;

template <int DK, int DV>
using TcLayout = tc::QueryTiledLayout<DK, DV>;
// v3: the same walk with the K/V stages as wgmma core matrices (wgmma.cuh).
using WgLayout = tc::QueryTiledLayout<64, 64, /*CORE=*/true>;

// ---- one warp's 16 rows ---------------------------------------------------------
template <int DK, int DV>
struct WarpRows {
  uint32_t q[DK / 16][4];  // Q as A fragments, one per 16 dims (rows gid, gid + 8)
  float o[DV / 8][4];      // unnormalised output, C layout (8 columns per entry)
  float m[2];              // running max of rows gid, gid + 8 (score * scale * log2 e)
  float l[2];              // this lane's share of the row sums of 2^(s - m)
};

// Q of the warp's rows gid, gid + 8 as A fragments (zeros for padding rows);
// O, m, l empty.
template <typename T, int DK, int DV>
__device__ __forceinline__ void init_rows(WarpRows<DK, DV>& w, const AttnParams& p, const tc::TcThread& cta,
                                          const tc::WarpQueryRows& rows) {
  const T* q = static_cast<const T*>(p.q);
  tc::load_a_frags<T, DK>(w.q, q + row_offset(cta.b, imax(rows.t[0], 0), rows.hq[0], p.S, p.H, DK), rows.t[0] >= 0,
                          q + row_offset(cta.b, imax(rows.t[1], 0), rows.hq[1], p.S, p.H, DK), rows.t[1] >= 0, cta.tig);
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) w.o[n][0] = w.o[n][1] = w.o[n][2] = w.o[n][3] = 0.f;
  w.m[0] = w.m[1] = -INFINITY;
  w.l[0] = w.l[1] = 0.f;
}

// Normalise and write rows gid (o[.][0..1]) and gid + 8 (o[.][2..3]) of a warp
// that owns them.
template <typename T, int DK, int DV>
__device__ __forceinline__ void write_rows(const AttnParams& p, const tc::WarpQueryRows& rows,
                                           const WarpRows<DK, DV>& w, int b, int tig) {
  T* o = static_cast<T*>(p.o);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float l = w.l[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int t = rows.t[i], hq = rows.hq[i];
    if (t < 0) continue;
    const float inv = l > 0.f ? 1.f / l : 0.f;  // no visible key: o = 0
    T* orow = o + row_offset(b, t, hq, p.S, p.H, DV);
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tig) = tc::pack2<T>(w.o[n][2 * i] * inv, w.o[n][2 * i + 1] * inv);
    }
    if (tig == 0) {
      p.lse_out[(int64_t(b) * p.S + t) * p.H + hq] = l > 0.f ? (w.m[i] + log2f(l)) * kLn2 : INFINITY;
    }
  }
}

// Selected with split keys: the 4 warps hold partial (m, l, O) of the same 16
// rows; merge them through shared memory (the K/V stages are free: the key walk
// ended on a barrier with no copy in flight) in warp order, and write.
template <typename T, int DK, int DV>
__device__ __forceinline__ void merge_and_write_rows(const AttnParams& p, unsigned char* smem, const tc::TcThread& cta,
                                                     const WarpRows<DK, DV>& w) {
  constexpr int kLdO = DV + 8;
  static_assert(size_t(kTcWarps) * 16 * (kLdO + 2) * sizeof(float) <= tc::KvStages<DK, DV>::kBytes,
                "the merge area must fit in the K/V stages");
  float* red_o = reinterpret_cast<float*>(smem);  // [4][16][kLdO]
  float* red_m = red_o + kTcWarps * 16 * kLdO;    // [4][16]
  float* red_l = red_m + kTcWarps * 16;           // [4][16]
  tc::stash_warp_rows<DV, kLdO>(red_o, w.o, cta);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float l = w.l[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = cta.gid + 8 * i;
    if (cta.tig == 0) red_m[cta.warp * 16 + r] = w.m[i], red_l[cta.warp * 16 + r] = l;
  }
  __syncthreads();
  T* o = static_cast<T*>(p.o);
  tc::for_each_merged_pair<DV>(p, cta, [&](int r, int c, int t, int hq) {
    float mx = -INFINITY;
#pragma unroll
    for (int ww = 0; ww < kTcWarps; ++ww) mx = fmaxf(mx, red_m[ww * 16 + r]);
    float l = 0.f, o0 = 0.f, o1 = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int ww = 0; ww < kTcWarps; ++ww) {
        const float f = exp2f(red_m[ww * 16 + r] - mx);  // a warp that saw nothing: 0
        const float* orow = red_o + (ww * 16 + r) * kLdO;
        l += red_l[ww * 16 + r] * f;
        o0 += orow[c] * f;
        o1 += orow[c + 1] * f;
      }
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    *reinterpret_cast<uint32_t*>(o + row_offset(cta.b, t, hq, p.S, p.H, DV) + c) = tc::pack2<T>(o0 * inv, o1 * inv);
    if (c == 0) p.lse_out[(int64_t(cta.b) * p.S + t) * p.H + hq] = l > 0.f ? (mx + log2f(l)) * kLn2 : INFINITY;
  });
}

// ---- queries x heads per CTA, every branch ------------------------------------------
// L = TcLayout (v2: each warp's mma.sync on ldmatrix fragments) or WgLayout
// (v3: the CTA's 4 warps as one warpgroup, S and O on wgmma; the softmax and
// masks between them are v2's, per warp, on the same accumulator layout).
template <typename T, int DK, int DV, Branch BR, typename L>
__device__ __forceinline__ void tc_fwd_rows_body(const AttnParams& p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const tc::TcThread cta(p);
  const tc::WarpQueryRows rows = tc::warp_rows<BR>(p, cta);
  const int lane = cta.lane, tig = cta.tig, tr0 = rows.t[0], tr1 = rows.t[1];
  WarpRows<DK, DV> w;
  init_rows<T, DK, DV>(w, p, cta, rows);
  const float scale_log2 = p.scale * kLog2e;
  tc::walk_keys<T, DK, DV, BR, L>(p, smem_raw, cta, rows, [&](const T* ks, const T* vs, const auto& view) {
    constexpr int NK = std::decay_t<decltype(view)>::kCols;
    float s[NK / 8][4];
    if constexpr (L::kCore) {
      wg::warpgroup_a_bt<T, DK>(s, w.q, ks);
    } else {
      tc::warp_a_bt<T, DK, NK, L::kLdK>(s, w.q, ks, 0, lane);
    }
    if (!view.all) {  // the warp sees the whole tile (warp-uniform): no per-element test
      tc::with_visibility(view, tr0, tr1, [&](const auto& visible) {
#pragma unroll
        for (int n = 0; n < NK / 8; ++n) {
#pragma unroll
          for (int j = 0; j < 4; ++j) s[n][j] = visible(j / 2, n * 8 + 2 * tig + (j & 1)) ? s[n][j] : -INFINITY;
        }
      });
    }
    tc::softmax_update<NK, DV>(s, scale_log2, w.m, w.l, w.o);
    if constexpr (L::kCore) {
      wg::warpgroup_c_b<T, NK>(w.o, s, vs);
    } else {
      tc::warp_c_b<T, DV, NK, L::kLdV>(w.o, s, vs, 0, lane);
    }
  });
  if (tc::splits_keys<BR>(p)) {
    merge_and_write_rows<T, DK, DV>(p, smem_raw, cta, w);
  } else {
    write_rows<T, DK, DV>(p, rows, w, cta.b, tig);
  }
}

template <typename T, int DK, int DV, Branch BR>
__device__ __forceinline__ void tc_fwd_body(const AttnParams& p) {
  tc_fwd_rows_body<T, DK, DV, BR, TcLayout<DK, DV>>(p);
}
NSA_TC_BRANCH_KERNELS(fwd, tc_fwd_body, TcFamily::Forward)

// v3 bodies exist for dk = dv = 64 only (m64n64 MMAs, 32 accumulators each).
template <typename T, int DK, int DV, Branch BR>
__device__ __forceinline__ void wg_fwd_body(const AttnParams& p) {
  static_assert(DK == 64 && DV == 64, "the wgmma forward tiles dk = dv = 64");
  tc_fwd_rows_body<T, DK, DV, BR, WgLayout>(p);
}
NSA_TC_BRANCH_KERNELS_AS(fwd, wg, wg_fwd_body, TcFamily::Forward)

std::atomic<int> g_forward_wgmma{0};
std::atomic<int> g_last_fwd_wgmma{0};
std::atomic<int> g_last_fwd_columns{0};
std::atomic<int> g_last_fwd_key_outer{0};

// Does this forward run on wgmma? Only when switched on (set_forward_wgmma),
// where wgmma_declines() has nothing against it, at dk = dv = 64, and not for
// Selected under SplitKeys (its warps hold the same rows; a warpgroup MMA
// cannot split them). Off by default: on the H200 it measured slower than v2
// once v2 copied whole rows per instruction (selected forward at the m7c
// training shape 0.447 against 0.413 ms; docs/performance.md): the kernels are
// latency-bound and a warpgroup MMA cannot skip the tiles a warp's queries did
// not choose.
bool use_wgmma(Branch br, const AttnParams& p) {
  if (!forward_wgmma() || p.dk != 64 || p.dv != 64) return false;
  if (br == Branch::Selected && selected_split_keys(p)) return false;
  return wgmma_runs();
}

struct LaunchFwd {
  template <typename T, int DK, int DV>
  static bool run(Branch br, AttnParams& p) {
    const bool key_outer = br == Branch::Selected && selected_key_outer(p, /*dq=*/false);
    g_last_fwd_key_outer.store(key_outer ? 1 : 0);
    if (key_outer) {
      g_last_fwd_columns.store(0);
      g_last_fwd_wgmma.store(0);
      launch_selected_key_outer<T, DK, DV>(p);
      return true;
    }
    const bool columns = br == Branch::Selected && selected_query_columns(p);
    g_last_fwd_columns.store(columns ? 1 : 0);
    if (columns) {
      g_last_fwd_wgmma.store(0);
      launch_selected_columns<T, DK, DV>(p, /*dq=*/false);
      return true;
    }
    const bool wg = use_wgmma(br, p);
    g_last_fwd_wgmma.store(wg ? 1 : 0);
    if constexpr (DK == 64 && DV == 64) {
      if (wg) {
        launch_tc_query_kernel<WgLayout>(br, p, fwd_wg_kernels<T, DK, DV>());
        return true;
      }
    }
    launch_tc_query_kernel<TcLayout<DK, DV>>(br, p, fwd_tc_kernels<T, DK, DV>());
    return true;
  }
};

// The one switch between v1 and v2. Its only writer in a model run is the
// layer (layer_routing.cpp), from Runtime's NSA_CUDA_KERNEL_V1 (flag registry:
// scenario, then environment); kernel tests and benchmarks set it directly.
std::atomic<int> g_force_v1{0};
std::atomic<int> g_last_fwd_version{0};

}  // namespace

bool force_v1_kernels() { return g_force_v1.load() == 1; }

namespace {
std::atomic<int> g_selected_tiling{0};
}
void set_selected_tiling(SelectedTiling t) { g_selected_tiling.store(int(t)); }

SelectedTiling parse_selected_tiling(std::string_view value) {
  static constexpr std::pair<std::string_view, SelectedTiling> kNames[] = {
      {"auto", SelectedTiling::Auto},
      {"shared_rows", SelectedTiling::SharedRows},
      {"split_keys", SelectedTiling::SplitKeys},
      {"query_columns", SelectedTiling::QueryColumns},
      {"key_outer", SelectedTiling::KeyOuter}};
  for (const auto& [name, tiling] : kNames)
    if (value == name) return tiling;
  TORCH_CHECK(false, "NSA_SELECTED_TILING: expected auto, shared_rows, split_keys, query_columns or key_outer, got '",
              value, "'");
}
SelectedTiling selected_tiling() { return SelectedTiling(g_selected_tiling.load()); }

void set_force_v1_kernels(bool on) { g_force_v1.store(on ? 1 : 0); }

int last_forward_kernel_version() { return g_last_fwd_version.load(); }

void set_forward_wgmma(bool on) { g_forward_wgmma.store(on ? 1 : 0); }
bool forward_wgmma() { return g_forward_wgmma.load() == 1; }
bool last_forward_used_wgmma() { return g_last_fwd_version.load() == 2 && g_last_fwd_wgmma.load() == 1; }
bool last_forward_used_key_outer() {
  return g_last_fwd_version.load() == 2 && g_last_fwd_key_outer.load() == 1;
}
bool last_forward_used_query_columns() {
  return g_last_fwd_version.load() == 2 && g_last_fwd_columns.load() == 1;
}

std::string wgmma_declines() {
#ifndef NSA_CUDA_SM90A
  return "built without sm_90a code (CMAKE_CUDA_ARCHITECTURES has no 90)";
#else
  int dev = 0, major = 0, minor = 0;
  NSA_CUDA_CHECK(cudaGetDevice(&dev));
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major != 9 || minor != 0)
    return "wgmma needs compute capability 9.0 (Hopper); this device is " + std::to_string(major) + "." +
           std::to_string(minor);
  return "";
#endif
}

bool wgmma_runs() {
  static const bool ok = wgmma_declines().empty();
  return ok;
}

bool selected_wgmma(SelectedMma asked, bool by_default) {
  if (asked == SelectedMma::MmaSync || (asked == SelectedMma::Auto && !by_default)) return false;
  return wgmma_runs();
}

bool launch_attention_fwd_tc(Branch br, at::ScalarType dtype, AttnParams& p) {
  return launch_v2_or_decline<LaunchFwd>(br, dtype, p, {p.k, p.v, p.q, p.o}, g_last_fwd_version);
}

}  // namespace nsa::cuda
