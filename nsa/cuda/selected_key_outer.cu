// Selected forward and dq v2, KeyOuter tiling: each chosen block's K/V is
// loaded once for every query that chose it, not once per query.
//
// Why: the query-tiled forward (attention_fwd_tc.cu) gathers each query's n
// blocks. With unrelated choices (long sequences: a query picks 16 of ~1000
// blocks) neighbouring queries share almost none of them, so a (query, group)
// pair reads n x 64 keys x (dk + dv) x 2 bytes — 655 KB at the paper's shape,
// 16 FLOP per byte for its 16 heads: at 64k that forward moved ~172 GB from L2
// and ran at 5 % of the tensor cores' peak. Turned around, block j's K/V tile
// (40 KB) serves the ~1000 queries of the reverse index that chose it, and
// each (query, block) pair moves its Q rows in (h x dk x 2 bytes) and one
// partial result out.
//
// Three kernels per chunk of queries [q_lo, q_hi) (a chunk's partials fit
// kChunkBytes; set_selected_key_outer_chunk forces a size):
//   1. nsa_selected_ko_units_kernel: per key (b, g, block j) the chunk's part
//      of its reverse-index list (two binary searches: the list is ascending),
//      cut into units of at most kUnitRows rows (query, head); a unit is one
//      CTA of the next kernel. Units are numbered by an integer atomic: their
//      order varies, what each computes does not.
//   2. nsa_selected_fwd_ko_kernel: one CTA per unit. K/V of block j in shared
//      memory once; each warp walks its own groups of 16 of the unit's rows
//      (Q by cp.async into the warp's buffer, one group ahead): S = Q K^T,
//      the block's own softmax (its max m and sum l), O = P V on mma.sync, as
//      the query-tiled forward's tile step (on Hopper the two products as
//      warpgroup MMAs, 4 warps' groups together); then the row's partial O / l,
//      rounded to the input dtype, and lse2 = m + log2 l (fp32) go to the
//      slot the block has in the query's block_idx row.
//   3. nsa_selected_fwd_merge_kernel: one CTA per (b, t, g) and block of its
//      heads, the slots' partials copied into shared memory all at once: per
//      output row the n partials in slot order, weighted by 2^(lse2_i - max),
//      summed in fp32 (a fixed order: results are bitwise reproducible), o in
//      the input dtype and the natural-log lse the backward reads; a row with
//      no visible key: o = 0, lse = +inf, as every other forward.
// The partials are the traffic (each written once and read once: at the
// paper's shape 4 KB a (query, block) pair in bf16 against 6 KB of Q read),
// so they are kept in the input dtype (in fp32, the first version: paper_kernel
// 64k 39.7 ms against 34.0; docs/performance.md). Why that costs no accuracy
// class: a partial is O_i / l_i, a convex combination of the block's V rows,
// so rounding it errs by at most u max|v| (u = 2^-8 in bf16, 2^-11 in fp16),
// and o = sum_i w_i O_i with sum_i w_i = 1 inherits u x the weighted mean of
// |O_i|; the query-tiled forward already rounds P to the input dtype before
// P V, an error of the same size (u x the weighted mean of |v|). Normalised, a
// partial never exceeds max|v|: no overflow in fp16.
// The backward's dq the same way (nsa_selected_bwd_dq_ko_kernel and
// nsa_selected_bwd_dq_merge_kernel, the same units and chunks): the
// query-tiled dq kernel gathered every query's n blocks as the forward did (88
// of the paper_kernel layer's 248 ms forward + backward at 64k, H200). Per
// (query, block) pair the dq ko kernel reads Q and dO, recomputes S = Q K^T
// and dP = dO V^T, P = 2^(S scale log2 e - lse log2 e), dS = P (dP - delta),
// and writes the partial scale dS K, rounded to the input dtype, to the
// block's slot; the merge sums a row's slots in order in fp32. Rounding a
// partial errs by at most u |scale dS K| <= u scale sum_k |dS_k| |K_k|, the
// bound the query-tiled dq already has from rounding dS before dS K. Bitwise
// reproducible like the forward; no atomics (BackwardDq::atomic is the other
// way to spare the gathering, with float atomics; BackwardDq::slots has the
// dk/dv kernel write these partials from its own dS, and this merge sums
// them). The reverse index is the one attention_backward built for dk/dv. Measured (H200, BM_SelectedBwdTiling,
// docs/performance.md): the selected backward (dq + dk/dv) at paper_kernel 64k
// 104 ms query-tiled against 70.7, m7c 64k 8.61 against 6.49 (65.6 and 6.23
// once the rows were copied 8 lanes a row).
// Applies where sel_block = 64 (a block is one key tile), n <= 32 (a row's
// slots in one warp's lanes), fp16/bf16, the v2 head dims.
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/key_outer_chunks.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/packs.cuh"
#include "nsa/cuda/query_tiles.cuh"
#include "nsa/cuda/reverse_index.h"
#include "nsa/cuda/wgmma.cuh"

namespace nsa::cuda {
namespace {

using tc::kLn2;
using tc::kLog2e;
using tc::kTcKeys;
using tc::kTcThreads;

constexpr int kUnitRows = 1024;          // rows (query, head) per CTA at most: 16 groups of 16 a warp
constexpr int64_t kChunkBytes = 1 << 30;  // the partials of one chunk of queries, at most
constexpr int kMergeThreads = 128;

std::atomic<int64_t> g_chunk_queries{0};
std::atomic<int> g_ko_warps{0};       // set_selected_key_outer_warps: 0 = the rule (fwd_ko_warps)
std::atomic<int> g_last_ko_warps{0};  // last_selected_key_outer_warps
std::atomic<int> g_ko_mma{int(SelectedMma::Auto)};  // set_selected_key_outer_mma
std::atomic<bool> g_last_ko_wgmma{false};           // last_selected_key_outer_wgmma

// The bytes of one query's partials (its B G n h rows of the layout below):
// part_d elements of elem_bytes each, and an fp32 lse where with_lse.
int64_t partial_bytes_per_query(const AttnParams& p, int part_d, size_t elem_bytes, bool with_lse) {
  return int64_t(p.B) * p.G * p.n_sel * p.h *
         (part_d * int64_t(elem_bytes) + (with_lse ? int64_t(sizeof(float)) : 0));
}

// One chunk's work list and partials.
struct KoChunk {
  int q_lo = 0, q_len = 0;     // the chunk's queries [q_lo, q_lo + q_len)
  int units_per_key = 0;       // queries per unit: max(1, kUnitRows / h)
  int* n_units = nullptr;      // [1], counted by the units kernel
  int* unit_key = nullptr;     // (b G + g) n_blocks + j
  int64_t* unit_e0 = nullptr;  // the unit's first entry in rev_query
  int* unit_len = nullptr;     // its entries (queries)
  void* part = nullptr;        // [B][q_len][G][n][h][D] in T: the forward's O / l (D = dv), dq's scale dS K (D = dk)
  float* part_lse = nullptr;   // forward: [B][q_len][G][n][h], m + log2 l (log2 domain, scale folded in)
};

__device__ __forceinline__ int64_t part_row(const AttnParams& p, const KoChunk& c, int b, int t, int g, int slot,
                                            int hh) {
  return (((int64_t(b) * c.q_len + (t - c.q_lo)) * p.G + g) * p.n_sel + slot) * p.h + hh;
}

// The first position in list[lo, hi) (ascending) holding a value >= x.
__device__ __forceinline__ int64_t lower_bound(const int* list, int64_t lo, int64_t hi, int x) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (list[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

__global__ void nsa_selected_ko_units_kernel(AttnParams p, KoChunk c) {
  const int key = int(blockIdx.x) * blockDim.x + threadIdx.x;
  if (key >= p.B * p.G * p.n_blocks) return;
  const int64_t off = p.rev_offset[key], end = p.rev_offset[key + 1];
  const int64_t lo = lower_bound(p.rev_query, off, end, c.q_lo);
  const int64_t hi = lower_bound(p.rev_query, lo, end, c.q_lo + c.q_len);
  const int64_t n = hi - lo;
  if (n == 0) return;
  const int units = int((n + c.units_per_key - 1) / c.units_per_key);
  const int base = atomicAdd(c.n_units, units);
  for (int u = 0; u < units; ++u) {
    c.unit_key[base + u] = key;
    c.unit_e0[base + u] = lo + int64_t(u) * c.units_per_key;
    c.unit_len[base + u] = int(std::min<int64_t>(c.units_per_key, n - int64_t(u) * c.units_per_key));
  }
}

// Shared memory: the block's K and V (loaded once), then one 16-row buffer per
// warp (each warp walks its own rows: no barrier after the K/V load) for Q,
// and in dq Q and dO. Forward at 192/128: 68.6 KB with 4 warps, 94 KB with 8
// (the K/V's 43 KB shared by twice the rows; a CTA-wide double-buffered 64-row
// Q stage took 95 KB for 4 warps: an instruction issued every 4.4 cycles per
// scheduler, ncu). dq: 87 KB at 192/128, 2 CTAs.
// WG: the forward on warpgroup MMAs, its K / V tile as wgmma's core matrices
// (unpadded rows, wgmma.cuh); else rows padded for ldmatrix.
template <int DK, int DV, bool kDq, int WARPS = tc::kTcWarps, bool WG = false>
struct KoLayout {
  static constexpr int kLdK = WG ? DK : DK + tc::kSmemPad, kLdV = WG ? DV : DV + tc::kSmemPad;
  static constexpr size_t kKvBytes = size_t(kTcKeys) * (kLdK + kLdV) * 2;
  // A buffer row: Q, or Q | dO | pad, an odd number of 16-byte pieces either
  // way, so ldmatrix's 8 rows fall in 8 distinct bank groups.
  static constexpr int kLdQ = DK + tc::kSmemPad;
  static constexpr int kLdWarp = kDq ? kLdQ + DV + 2 * tc::kSmemPad : kLdQ;
  static constexpr size_t kBytes = kKvBytes + size_t(WARPS) * 16 * kLdWarp * 2;
  static_assert(kBytes <= kSmemBudget, "KeyOuter tiles exceed the shared-memory budget");
};

// The unit's block: K and V rows k0 .. k0 + 63 of (b, g) into shared memory
// (zeros past the end), PARTS = threads / 64 threads a row, one cp.async group;
// rows of LDK / LDV elements, or with CORE wgmma's core matrices.
template <typename T, int DK, int DV, int LDK, int LDV, int THREADS = kTcThreads, bool CORE = false>
__device__ __forceinline__ void load_block_kv(T* Ks, T* Vs, const AttnParams& p, int b, int g, int k0, int tid) {
  constexpr int kParts = THREADS / kTcKeys;
  const int r = tid / kParts, kr = k0 + r;
  const bool valid = kr < p.Sk;
  const int src = valid ? kr : 0;
  const T* k = static_cast<const T*>(p.k) + row_offset(b, src, g, p.Sk, p.G, DK);
  const T* v = static_cast<const T*>(p.v) + row_offset(b, src, g, p.Sk, p.G, DV);
  if constexpr (CORE) {
    wg::copy_row_core_async<DK, kParts>(Ks, r, k, valid, tid % kParts);
    wg::copy_row_core_async<DV, kParts>(Vs, r, v, valid, tid % kParts);
  } else {
    tc::copy_row_async<DK, kParts>(Ks + r * LDK, k, valid, tid % kParts);
    tc::copy_row_async<DV, kParts>(Vs + r * LDV, v, valid, tid % kParts);
  }
  tc::cp_async_commit();
}

// A warp's rows (query, head) of one unit, 16 at a time: lane l holds the
// query of row l % 16 of group gi (-1 past the rows).
// Lane l also finds row l % 16's slot, the slot its entry came from in the
// query's block_idx row (the reverse index keeps it beside the query): one
// load, where searching the row for block j took n_sel.
struct UnitRows {
  const int* rev_query;
  const int* rev_slot;
  int64_t e0;
  int n_rows, h;
  __device__ int query_of(int gi, int lane) const { return entry(rev_query, gi, lane); }
  __device__ int slot_of(int gi, int lane) const { return entry(rev_slot, gi, lane); }
  // Row l % 16's entry of a reverse-index list (its query or slot), -1 past the rows.
  __device__ int entry(const int* list, int gi, int lane) const {
    const int ri = gi * 16 + lane % 16;
    return ri < n_rows ? list[e0 + ri / h] : -1;
  }
};

// The unit CTA u takes: block j (keys k0 .. k0 + 63, sel_block = 64) of
// (b, g) and the unit's rows, in n_groups groups of 16.
struct KoUnit {
  int b, g, k0;
  UnitRows rows;
  int n_groups;
  __device__ static KoUnit of(const AttnParams& p, const KoChunk& c, int u) {
    const int key = c.unit_key[u], bg = key / p.n_blocks, j = key % p.n_blocks;
    const UnitRows rows{p.rev_query, p.rev_slot, c.unit_e0[u], c.unit_len[u] * p.h, p.h};
    return {bg / p.G, bg % p.G, j * kTcKeys, rows, ceil_div(rows.n_rows, 16)};
  }
};

// The thread's two accumulator rows (gid, gid + 8) of group gi: their queries
// (-1 past the unit's rows), and whether all 16 rows see all 64 keys of the
// block. Key k0 + col is visible to row t iff k0 + col <= t (the block holds
// no key past the end then: t < S = Sk); rows ascend in t, so when the
// group's first row reaches the block's last key all 16 see all 64. (The
// rows' heads stay where they are written: computed here, the forward at
// 64/64 took 125 registers instead of 82, ptxas.)
struct GroupRows {
  int t[2];
  bool all;
  // t_lane: lane l's query of row l % 16 (UnitRows::query_of).
  __device__ __forceinline__ static GroupRows of(const UnitRows& rows, int gi, int k0, int t_lane, int lane) {
    const int gid = lane / 4;
    GroupRows r;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      r.t[e] = __shfl_sync(0xffffffffu, t_lane, gid + 8 * e);
    }
    r.all = gi * 16 + 16 <= rows.n_rows && __shfl_sync(0xffffffffu, t_lane, 0) >= k0 + kTcKeys - 1;
    return r;
  }
};

// A warp's group of 16 rows into its buffer: 8 lanes a row (one 128-byte line
// an instruction a row, tc::copy_row_async), four rows a pass. Each row's
// query (a shuffle) and head (a modulo) are worked out once a pass; worked out
// once a 16-byte piece, the address arithmetic was a quarter of the dq
// kernel's instructions (IMAD, ncu at paper_kernel 64k) beside 10 % HMMA; with
// two lanes a row (16 lines an instruction) the forward lost 6 % (H200).
// copy(r, offset, valid) issues row r's copies for the lane's part, lane % 8:
// offset(dim) is the row's start in a [B, S, H, dim] tensor, valid false for
// a padding row (zeros copied). t_lane: lane l's query of row l % 16
// (UnitRows::query_of).
template <typename Copy>
__device__ __forceinline__ void copy_group_rows(const AttnParams& p, int b, int g, int gi, int t_lane, int lane,
                                                const Copy& copy) {
#pragma unroll
  for (int pass = 0; pass < 4; ++pass) {
    const int r = 4 * pass + lane / 8, t = __shfl_sync(0xffffffffu, t_lane, r);
    const int hq = g * p.h + (gi * 16 + r) % p.h;
    copy(r, [&](int dim) { return row_offset(b, t < 0 ? 0 : t, hq, p.S, p.H, dim); }, t >= 0);
  }
}

// A warp's first group of rows: issued behind the block's K/V (its own
// cp.async group), then the wait for this thread's K/V pieces (the older
// group) and the barrier after which every thread's are in shared memory
// (with WG also for the warpgroup MMAs, which read them through the async proxy).
template <bool WG = false, typename Issue>
__device__ __forceinline__ void start_rows(int gi, int n_groups, int t_lane, const Issue& issue) {
  if (gi < n_groups) {
    issue(gi, t_lane);
    tc::cp_async_wait<1>();
  } else {
    tc::cp_async_wait<0>();
  }
  if constexpr (WG) wg::fence_proxy_async();
  __syncthreads();
}

// The unit's rows (query, head) in groups of 16; warp w takes groups w,
// w + WARPS, ... Per group: Q (cp.async into the warp's buffer, issued one
// group ahead: the buffer is free again once its rows are A fragments in
// registers), then
// S = Q K^T, the block's own softmax (max m, sum l), O = P V on mma.sync, and
// the partial of each row to the slot the block has in its query's row.
// Registers (ptxas, CUDA 13.0, sm_90a): with 4 warps 172 at 192/128 and 137
// at 64/64 (2 and 3 CTAs an SM; at 64/64 asked to fit 5, 20 warps, spilling
// 16 bytes). 8 warps at dv <= 128 are asked to fit 2 CTAs an SM (128
// registers, no spill on sm_90a; unasked, 130 at 192/128 left one); at dv 192
// the accumulators need ~210 and 8 warps stay one CTA (the rule then keeps 4).
// WG (sm_90a): the two products on warpgroup MMAs instead (wgmma.cuh), the
// 4 warps of a warpgroup taking 4 consecutive groups (64 rows) together: the
// tensor cores read the block's K and V from shared memory once for 64 rows,
// where each warp's mma.sync fetched them (ldmatrix) for its 16 — 40 KB of
// shared-memory reads a group at 192/128. A warp past the unit's rows still
// joins its warpgroup's MMAs with zero rows and writes nothing. The fragments
// and the accumulators have mma.sync's layouts (wgmma.cuh), so the masking,
// softmax and stores are the same code.
template <int DK, int DV, int WARPS>
constexpr int kFwdKoMinCtas = WARPS == 8 && DV <= 128 ? 2 : WARPS == 4 && DK <= 64 && DV <= 64 ? 5 : 1;

template <typename T, int DK, int DV, int WARPS, bool WG>
__global__ void __launch_bounds__(32 * WARPS, kFwdKoMinCtas<DK, DV, WARPS>)
    nsa_selected_fwd_ko_kernel(AttnParams p, KoChunk c) {
  using L = KoLayout<DK, DV, false, WARPS, WG>;
  const int u = blockIdx.x;
  if (u >= *c.n_units) return;  // the grid is an upper bound of the units
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);  // [64][kLdK]
  T* Vs = Ks + kTcKeys * L::kLdK;          // [64][kLdV]
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  T* Qw = Vs + kTcKeys * L::kLdV + warp * 16 * L::kLdQ;  // this warp's [16][kLdQ]
  const KoUnit unit = KoUnit::of(p, c, u);
  const int b = unit.b, g = unit.g, k0 = unit.k0, n_groups = unit.n_groups;
  const UnitRows& rows = unit.rows;
  const T* q = static_cast<const T*>(p.q);
  load_block_kv<T, DK, DV, L::kLdK, L::kLdV, 32 * WARPS, WG>(Ks, Vs, p, b, g, k0, tid);
  const auto issue_q = [&](int gi, int t_lane) {
    copy_group_rows(p, b, g, gi, t_lane, lane, [&](int r, const auto& offset, bool valid) {
      tc::copy_row_async<DK, 8>(Qw + r * L::kLdQ, q + offset(DK), valid, lane % 8);
    });
    tc::cp_async_commit();
  };
  int gi = warp, t_cur = rows.query_of(gi, lane), t_next = rows.query_of(gi + WARPS, lane);
  start_rows<WG>(gi, n_groups, t_cur, issue_q);
  const float scale_log2 = p.scale * kLog2e;
  // WG: while the warpgroup's first group is a group (the same trip count for its 4 warps).
  for (; (WG ? gi - warp % 4 : gi) < n_groups; gi += WARPS) {
    tc::cp_async_wait<0>();
    __syncwarp();
    uint32_t qa[DK / 16][4];
    if (!WG || gi < n_groups) {
      tc::ldmatrix_a_frags<T, DK, L::kLdQ>(qa, Qw, 0, lane);
    } else {
#pragma unroll
      for (int kk = 0; kk < DK / 16; ++kk) qa[kk][0] = qa[kk][1] = qa[kk][2] = qa[kk][3] = 0u;
    }
    __syncwarp();  // every lane's fragments are read before the buffer refills
    const int t_here = t_cur;
    if (gi + WARPS < n_groups) issue_q(gi + WARPS, t_next);
    t_cur = t_next;
    t_next = rows.query_of(gi + 2 * WARPS, lane);
    // For row lane % 16; loaded now, used after the products.
    const int slot = rows.slot_of(gi, lane);
    float s[kTcKeys / 8][4];
    if constexpr (WG)
      wg::warpgroup_a_bt<T, DK>(s, qa, Ks);
    else
      tc::warp_a_bt<T, DK, kTcKeys, L::kLdK>(s, qa, Ks, 0, lane);
    const GroupRows gr = GroupRows::of(rows, gi, k0, t_here, lane);
    if (!gr.all) {
#pragma unroll
      for (int n = 0; n < kTcKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[n][e] = k0 + n * 8 + 2 * tig + (e & 1) <= gr.t[e / 2] ? s[n][e] : -INFINITY;
      }
    }
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, o[DV / 8][4];
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    tc::softmax_update<kTcKeys, DV>(s, scale_log2, m, l, o);
    if constexpr (WG)
      wg::warpgroup_c_b<T, kTcKeys, DV>(o, s, Vs);
    else
      tc::warp_c_b<T, DV, kTcKeys, L::kLdV>(o, s, Vs, 0, lane);
    const int slot_row[2] = {__shfl_sync(0xffffffffu, slot, gid), __shfl_sync(0xffffffffu, slot, gid + 8)};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float sum = l[e];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int t = gr.t[e];
      if (t < 0) continue;
      // A listed (query, block) pair sees key k0 <= t: sum >= 1 (its max scores 2^0).
      const int64_t pr = part_row(p, c, b, t, g, slot_row[e], (gi * 16 + gid + 8 * e) % p.h);
      const float inv = 1.f / sum;
      T* orow = static_cast<T*>(c.part) + pr * DV;
#pragma unroll
      for (int n = 0; n < DV / 8; ++n)
        *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tig) = tc::pack2<T>(o[n][2 * e] * inv, o[n][2 * e + 1] * inv);
      if (tig == 0) c.part_lse[pr] = m[e] + log2f(sum);
    }
  }
}

// dq's partials, the forward's walk: the unit's rows in groups of 16, warp w
// taking groups w, w + 4, ..., Q and dO by cp.async into the warp's buffer,
// the next group's issued once this one's products have read it. Per group,
// as the query-tiled dq's step (attention_bwd_tc.cu):
//   S = Q K^T, dP = dO V^T                mma.sync, Q and dO read from the buffer
//   P = 2^(S scale log2 e - lse log2 e)   0 for a key past the row's t, or a
//                                         padding row (lse = +inf)
//   dS = P (dP - delta), dQ = dS K        dS rounded to the input dtype
// then scale dQ, rounded to the input dtype, to the block's slot in the row's
// query. Registers: S and dP (16 each), then the dq accumulators (dk/2) beside
// dS: 210 at 192/128, 178 at 64/64 (ptxas, CUDA 13.0, sm_90a; 2 CTAs an SM
// by shared memory).
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads, 2) nsa_selected_bwd_dq_ko_kernel(AttnParams p, KoChunk c) {
  using L = KoLayout<DK, DV, true>;
  const int u = blockIdx.x;
  if (u >= *c.n_units) return;  // the grid is an upper bound of the units
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);  // [64][kLdK]
  T* Vs = Ks + kTcKeys * L::kLdK;          // [64][kLdV]
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  T* Qw = Vs + kTcKeys * L::kLdV + warp * 16 * L::kLdWarp;  // this warp's [16][kLdWarp]: Q | dO
  T* Ow = Qw + L::kLdK;
  const KoUnit unit = KoUnit::of(p, c, u);
  const int b = unit.b, g = unit.g, k0 = unit.k0, n_groups = unit.n_groups;
  const UnitRows& rows = unit.rows;
  const T* q = static_cast<const T*>(p.q);
  const T* dout = static_cast<const T*>(p.dout);
  load_block_kv<T, DK, DV, L::kLdK, L::kLdV>(Ks, Vs, p, b, g, k0, tid);
  const auto issue_rows = [&](int gi, int t_lane) {
    copy_group_rows(p, b, g, gi, t_lane, lane, [&](int r, const auto& offset, bool valid) {
      tc::copy_row_async<DK, 8>(Qw + r * L::kLdWarp, q + offset(DK), valid, lane % 8);
      tc::copy_row_async<DV, 8>(Qw + r * L::kLdWarp + L::kLdK, dout + offset(DV), valid, lane % 8);
    });
    tc::cp_async_commit();
  };
  int gi = warp, t_cur = rows.query_of(gi, lane), t_next = rows.query_of(gi + tc::kTcWarps, lane);
  start_rows(gi, n_groups, t_cur, issue_rows);
  const float scale_log2 = p.scale * kLog2e;
  for (; gi < n_groups; gi += tc::kTcWarps) {
    tc::cp_async_wait<0>();
    __syncwarp();
    const int t_here = t_cur;
    const int slot = rows.slot_of(gi, lane);
    const GroupRows gr = GroupRows::of(rows, gi, k0, t_here, lane);
    float lse2[2], delta[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int t = gr.t[e];
      const int64_t i = (int64_t(b) * p.S + (t < 0 ? 0 : t)) * p.H + g * p.h + (gi * 16 + gid + 8 * e) % p.h;
      lse2[e] = t < 0 ? INFINITY : p.lse[i] * kLog2e;
      delta[e] = t < 0 ? 0.f : p.delta[i];
    }
    // Q and dO straight from the buffer a k-step at a time (holding them as
    // fragments, 80 registers at 192/128, spilled 68 bytes), then the buffer
    // takes the next group's rows while this one finishes.
    float s[kTcKeys / 8][4], dp[kTcKeys / 8][4];
    tc::warp_smem_a_bt<T, DK, kTcKeys, L::kLdWarp, L::kLdK>(s, Qw, 0, Ks, 0, lane);
    tc::warp_smem_a_bt<T, DV, kTcKeys, L::kLdWarp, L::kLdV>(dp, Ow, 0, Vs, 0, lane);
    __syncwarp();  // every lane's reads are done before the buffer refills
    if (gi + tc::kTcWarps < n_groups) issue_rows(gi + tc::kTcWarps, t_next);
    t_cur = t_next;
    t_next = rows.query_of(gi + 2 * tc::kTcWarps, lane);
#pragma unroll
    for (int n = 0; n < kTcKeys / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool vis = gr.all || k0 + n * 8 + 2 * tig + (e & 1) <= gr.t[e / 2];
        const float pr = vis ? tc::exp2_ftz(fmaf(s[n][e], scale_log2, -lse2[e / 2])) : 0.f;
        s[n][e] = pr * (dp[n][e] - delta[e / 2]);  // dS
      }
    }
    float dq[DK / 8][4];
#pragma unroll
    for (int n = 0; n < DK / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.f;
    tc::warp_c_b<T, DK, kTcKeys, L::kLdK>(dq, s, Ks, 0, lane);
    const int slot_row[2] = {__shfl_sync(0xffffffffu, slot, gid), __shfl_sync(0xffffffffu, slot, gid + 8)};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int t = gr.t[e];
      if (t < 0) continue;
      T* row = static_cast<T*>(c.part) + part_row(p, c, b, t, g, slot_row[e], (gi * 16 + gid + 8 * e) % p.h) * DK;
#pragma unroll
      for (int n = 0; n < DK / 8; ++n)
        *reinterpret_cast<uint32_t*>(row + n * 8 + 2 * tig) =
            tc::pack2<T>(dq[n][2 * e] * p.scale, dq[n][2 * e + 1] * p.scale);
    }
  }
}

// The merges: one CTA of kMergeThreads per (b, t, g) of the chunk and block of
// `heads` of its h heads (merge_heads). A (b, t, g)'s partials are n_sel slots
// of h x D contiguous elements each ([..][n][h][D]), so the CTA's heads are one
// contiguous run a slot: it copies the run of every slot that holds a partial
// into shared memory with cp.async, all at once, and only then sums.
// Why: the first merges took one warp per output row, each lane loading its 4
// columns slot by slot from global memory behind the row's block_idx and lse
// loads: four round trips one after another, 2 KB in flight a warp at most.
// Here a CTA has its whole share (32 KB at the paper's shape) in flight after
// one round trip (block_idx), the lse loads beside it. Measured (ncu, H200,
// paper_kernel 8k, one selected forward, the same 2.06 GB read): 0.744 ms at
// 59-64 % of the DRAM peak the warp way (two chunks and a short one), 0.671 ms
// at 66-69 % this way (three equal chunks; docs/performance.md).
// The arithmetic is the warp merge's, in the same order (each output the fp32
// sum over its valid slots ascending of w_s x partial, times 1 / sum w): the
// same results by construction (the tests hold both to the float64 reference).
struct MergeCta {
  int b, t, g, h0;  // the CTA's heads: h0 .. h0 + heads
  __device__ __forceinline__ static MergeCta of(const AttnParams& p, const KoChunk& c, int heads) {
    const int blocks = p.h / heads;
    int64_t i = blockIdx.x;
    const int h0 = int(i % blocks) * heads;
    i /= blocks;
    const int g = int(i % p.G);
    i /= p.G;
    return {int(i / c.q_len), c.q_lo + int(i % c.q_len), g, h0};
  }
};

// Lane s: does slot s of row (b, t, g) hold a partial? Where the reverse index
// listed the pair (block_chosen, its own test) and the block does not repeat an
// earlier slot (block_idx rows hold no duplicates; were one given, it counts
// once).
__device__ __forceinline__ bool slot_has_partial(const AttnParams& p, const MergeCta& r, int lane) {
  const int j = lane < p.n_sel ? p.block_idx[((int64_t(r.b) * p.S + r.t) * p.G + r.g) * p.n_sel + lane] : -1;
  bool valid = block_chosen(j, r.t, p.sel_block, p.n_blocks);
  const unsigned same = __match_any_sync(0xffffffffu, valid ? j : -1) & __ballot_sync(0xffffffffu, valid);
  return valid && __ffs(same) - 1 == lane;
}

// Shared memory of a merge CTA: the slots' runs [n_sel][heads][D] in T
// (merge_runs_bytes), then per head 32 slot weights and 1 / sum w (the
// forward's; dq's are all 1).
NSA_HD size_t merge_runs_bytes(int n_sel, int heads, int D, size_t elem_bytes) {
  return size_t(n_sel) * heads * D * elem_bytes;
}
size_t merge_smem_bytes(const AttnParams& p, int D, size_t elem_bytes, int heads) {
  return merge_runs_bytes(p.n_sel, heads, D, elem_bytes) + size_t(heads) * 33 * sizeof(float);
}
constexpr size_t kMergeSmemBudget = 32 * 1024;  // the slots' runs a CTA: 6 CTAs an SM, ~200 KB in flight

// Heads a merge CTA takes: the most that divide h and keep the slots' runs
// within kMergeSmemBudget (paper_kernel: 8 of 16 at dv 128, 4 at dk 192; m7c: 6).
int merge_heads(const AttnParams& p, int D, size_t elem_bytes) {
  int best = 1;
  for (int heads = 1; heads <= p.h; ++heads)
    if (p.h % heads == 0 && merge_runs_bytes(p.n_sel, heads, D, elem_bytes) <= kMergeSmemBudget) best = heads;
  return best;
}

// out rows (b, t, g h + h0 + hh), hh < heads: f_hh x sum over the valid slots
// (`slots`), ascending, of w[hh][s] x part[s][hh], in fp32, rounded once
// (kForward: w and f from `wts`; dq: all 1).
template <typename T, int D, bool kForward>
__device__ __forceinline__ void merge_cta(const AttnParams& p, const KoChunk& c, int heads, T* out_base) {
  extern __shared__ __align__(16) unsigned char merge_smem[];
  constexpr int kPiece = 16 / sizeof(T);  // elements a 16-byte copy
  static_assert(kPiece == 8 && D % kPiece == 0, "16-bit partials, rows of whole 16-byte pieces");
  T* runs = reinterpret_cast<T*>(merge_smem);
  float* wts = reinterpret_cast<float*>(merge_smem + merge_runs_bytes(p.n_sel, heads, D, sizeof(T)));
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const MergeCta r = MergeCta::of(p, c, heads);
  const unsigned slots = __ballot_sync(0xffffffffu, slot_has_partial(p, r, lane));
  // Every slot's run in flight at once.
  const T* src = static_cast<const T*>(c.part) + part_row(p, c, r.b, r.t, r.g, 0, r.h0) * D;
  const int pieces = heads * D / kPiece;
  for (unsigned m = slots; m != 0; m &= m - 1) {
    const int s = __ffs(m) - 1;
    for (int i = tid; i < pieces; i += kMergeThreads)
      tc::cp_async_16(runs + (s * heads) * D + i * kPiece, src + int64_t(s) * p.h * D + i * kPiece, true);
  }
  tc::cp_async_commit();
  if constexpr (kForward) {
    // A warp a head: the slots' weights 2^(lse2 - max), the warp merge's shuffles.
    const bool valid = (slots >> lane) & 1u;
    for (int hh = warp; hh < heads; hh += kMergeThreads / 32) {
      const float lse2 = valid ? c.part_lse[part_row(p, c, r.b, r.t, r.g, lane, r.h0 + hh)] : -INFINITY;
      float mx = lse2;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float w = valid ? tc::exp2_ftz(lse2 - mx) : 0.f;
      float wsum = w;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) wsum += __shfl_xor_sync(0xffffffffu, wsum, off);
      wts[hh * 32 + lane] = w;
      if (lane == 0) {
        wts[heads * 32 + hh] = slots ? 1.f / wsum : 0.f;  // no slot: o = 0
        p.lse_out[(int64_t(r.b) * p.S + r.t) * p.H + r.g * p.h + r.h0 + hh] =
            slots ? (mx + log2f(wsum)) * kLn2 : INFINITY;
      }
    }
  }
  tc::cp_async_wait<0>();
  __syncthreads();
  constexpr int kPieces = D / kPiece;  // a head's row
  for (int i = tid; i < heads * kPieces; i += kMergeThreads) {
    const int hh = i / kPieces, col = (i % kPieces) * kPiece;
    float a[kPiece] = {};
    for (unsigned m = slots; m != 0; m &= m - 1) {
      const int s = __ffs(m) - 1;
      const float ws = kForward ? wts[hh * 32 + s] : 1.f;
      const auto v = *reinterpret_cast<const Pack<T, kPiece>*>(runs + (s * heads + hh) * D + col);
#pragma unroll
      for (int e = 0; e < kPiece; ++e) a[e] = fmaf(ws, to_f(v.v[e]), a[e]);
    }
    const float f = kForward ? wts[heads * 32 + hh] : 1.f;
    uint4 packed;
    packed.x = tc::pack2<T>(a[0] * f, a[1] * f), packed.y = tc::pack2<T>(a[2] * f, a[3] * f);
    packed.z = tc::pack2<T>(a[4] * f, a[5] * f), packed.w = tc::pack2<T>(a[6] * f, a[7] * f);
    *reinterpret_cast<uint4*>(out_base + row_offset(r.b, r.t, r.g * p.h + r.h0 + hh, p.S, p.H, D) + col) = packed;
  }
}

// Forward: the slots' partials weighted by 2^(lse2 - max), o and the
// natural-log lse; a row with no slot: o = 0, lse = +inf.
template <typename T, int DV>
__global__ void __launch_bounds__(kMergeThreads) nsa_selected_fwd_merge_kernel(AttnParams p, KoChunk c, int heads) {
  merge_cta<T, DV, true>(p, c, heads, static_cast<T*>(p.o));
}

// dq: the slots' partials (scale already in them) summed; no slot: dq = 0.
template <typename T, int DK>
__global__ void __launch_bounds__(kMergeThreads) nsa_selected_bwd_dq_merge_kernel(AttnParams p, KoChunk c, int heads) {
  merge_cta<T, DK, false>(p, c, heads, static_cast<T*>(p.dq_out));
}

// A chunk's merge: one CTA per (b, t, g) and block of merge_heads heads.
template <typename T, int D>
void launch_merge(void (*kernel)(AttnParams, KoChunk, int), const AttnParams& p, const KoChunk& c) {
  const int heads = merge_heads(p, D, sizeof(T));
  const int64_t ctas = int64_t(p.B) * c.q_len * p.G * (p.h / heads);
  launch_kernel(kernel, dim3(unsigned(ctas)), kMergeThreads, merge_smem_bytes(p, D, sizeof(T), heads), p, c, heads);
}

// The reverse index (the backward's, when attention_backward has built it;
// else built here from p.block_idx), then the chunks of queries whose
// partials (`part_d` columns in T, with an fp32 lse when `with_lse`, per
// (query, slot, head)) fit kChunkBytes: per chunk the units kernel, then
// `launch(c, max_units)` queues the chunk's ko kernel and merge.
template <typename T, typename Launch>
void for_each_key_outer_chunk(AttnParams& p, int part_d, bool with_lse, const Launch& launch) {
  const int dev = c10::cuda::current_device();
  const auto on_gpu = at::TensorOptions().device(at::kCUDA, dev);
  ReverseIndex rev;
  if (p.rev_query == nullptr) {
    const at::Tensor block_idx = at::from_blob(const_cast<int*>(p.block_idx), {p.B, p.S, p.G, p.n_sel},
                                               on_gpu.dtype(at::kInt));
    rev = reverse_index(block_idx, p.sel_block, p.n_blocks);
    p.rev_query = rev.query.data_ptr<int>();
    p.rev_offset = rev.offset.data_ptr<int64_t>();
    p.rev_slot = rev.slot.data_ptr<int>();
  }
  TORCH_CHECK(p.rev_slot != nullptr, "the selected KeyOuter kernels need the reverse index's slots");
  const int64_t per_query = partial_bytes_per_query(p, part_d, sizeof(T), with_lse);
  const int64_t chunk = key_outer_chunk_queries(p.S, per_query, kChunkBytes, g_chunk_queries.load());
  KoChunk c;
  c.units_per_key = std::max(1, kUnitRows / p.h);
  // Units of a chunk: at most one partial unit per key plus the chunk's
  // entries (<= chunk x n per (b, g)) in whole units.
  const int64_t n_keys = int64_t(p.B) * p.G * p.n_blocks;
  const int64_t max_units = n_keys + int64_t(p.B) * p.G * ceil_div(int(chunk * p.n_sel), c.units_per_key);
  const int64_t part_rows = int64_t(p.B) * chunk * p.G * p.n_sel * p.h;
  const at::Tensor part = at::empty({part_rows * part_d}, on_gpu.dtype(c10::CppTypeToScalarType<T>::value));
  const at::Tensor part_lse = with_lse ? at::empty({part_rows}, on_gpu.dtype(at::kFloat)) : at::Tensor();
  const int64_t n_chunks = ceil_div(p.S, int(chunk));
  const at::Tensor counters = at::zeros({n_chunks}, on_gpu.dtype(at::kInt));
  const at::Tensor unit_key = at::empty({max_units}, on_gpu.dtype(at::kInt));
  const at::Tensor unit_len = at::empty({max_units}, on_gpu.dtype(at::kInt));
  const at::Tensor unit_e0 = at::empty({max_units}, on_gpu.dtype(at::kLong));
  c.part = part.data_ptr(), c.part_lse = with_lse ? part_lse.data_ptr<float>() : nullptr;
  c.unit_key = unit_key.data_ptr<int>(), c.unit_len = unit_len.data_ptr<int>(), c.unit_e0 = unit_e0.data_ptr<int64_t>();
  for (int64_t ci = 0; ci < n_chunks; ++ci) {
    c.q_lo = int(ci * chunk);
    c.q_len = int(std::min<int64_t>(chunk, p.S - c.q_lo));
    c.n_units = counters.data_ptr<int>() + ci;
    launch_kernel(nsa_selected_ko_units_kernel, dim3(ceil_div(int(n_keys), 256)), 256, 0, p, c);
    launch(c, max_units);
  }
  if (rev.query.defined())  // freed with `rev` (stream-ordered)
    p.rev_query = nullptr, p.rev_offset = nullptr, p.rev_slot = nullptr;
}

}  // namespace

void set_selected_key_outer_chunk(int64_t queries) { g_chunk_queries.store(queries < 0 ? 0 : queries); }
int64_t selected_key_outer_chunk() { return g_chunk_queries.load(); }
void set_selected_key_outer_warps(int warps) {
  TORCH_CHECK(warps == 0 || warps == 4 || warps == 8, "set_selected_key_outer_warps: 0, 4 or 8, got ", warps);
  g_ko_warps.store(warps);
}
int selected_key_outer_warps() { return g_ko_warps.load(); }
int last_selected_key_outer_warps() { return g_last_ko_warps.load(); }
void set_selected_key_outer_mma(SelectedMma mma) { g_ko_mma.store(int(mma)); }
SelectedMma selected_key_outer_mma() { return SelectedMma(g_ko_mma.load()); }
bool last_selected_key_outer_wgmma() { return g_last_ko_wgmma.load(); }

bool selected_key_outer_applies(const AttnParams& p) {
  return p.sel_block == kTcKeys && p.n_sel >= 1 && p.n_sel <= 32;
}

// Warps a forward ko CTA: the size with more warps resident an SM, as the
// driver counts them from the kernel's registers and shared memory (4 on a
// tie), unless set_selected_key_outer_warps forces one. 8 share one copy of
// the block's K/V among twice the rows. On sm_90a (registers above): mma.sync
// at 192/128 4 warps keep 8 an SM (2 CTAs by registers, 3 by shared memory), 8
// keep 16; at 64/64 4 keep 20 (5 CTAs, asked), 8 keep 16. wgmma at 192/128: 4
// keep 12 (130 registers), 8 keep 16 (125); at 64/64 4 keep 20, 8 keep 16 (96).
// Measured on an H200 (BM_SelectedKoWarps, BM_SelectedKoMma,
// docs/performance.md): mma.sync 8 warps 4.6 % faster at paper_kernel 64k;
// at m7c 64k 4 warps at 5 CTAs 2.75 ms against 8's 2.79 (8k: 0.412 against
// 0.400); wgmma 8 warps 2.8 % faster at paper 64k, 4 warps 9 % faster at m7c
// 64k. Worked out once a kernel, on the device that first runs it.
template <typename T, int DK, int DV, bool WG>
int fwd_ko_warps() {
  const int forced = g_ko_warps.load();
  if (forced != 0) return forced;
  static const int rule = [] {
    const auto resident_warps = [](auto kernel, int warps, size_t smem) {
      return resident_ctas_per_sm(kernel, 32 * warps, smem) * warps;
    };
    const int four =
        resident_warps(nsa_selected_fwd_ko_kernel<T, DK, DV, 4, WG>, 4, KoLayout<DK, DV, false, 4, WG>::kBytes);
    const int eight =
        resident_warps(nsa_selected_fwd_ko_kernel<T, DK, DV, 8, WG>, 8, KoLayout<DK, DV, false, 8, WG>::kBytes);
    return eight > four ? 8 : 4;
  }();
  return rule;
}

template <typename T, int DK, int DV, int WARPS, bool WG>
void launch_fwd_ko(AttnParams& p) {
  for_each_key_outer_chunk<T>(p, DV, /*with_lse=*/true, [&](const KoChunk& c, int64_t max_units) {
    launch_kernel(nsa_selected_fwd_ko_kernel<T, DK, DV, WARPS, WG>, dim3(unsigned(max_units)), 32 * WARPS,
                  KoLayout<DK, DV, false, WARPS, WG>::kBytes, p, c);
    launch_merge<T, DV>(nsa_selected_fwd_merge_kernel<T, DV>, p, c);
  });
  g_last_ko_warps.store(WARPS);
  g_last_ko_wgmma.store(WG);
}

// The forward's products on warpgroup MMAs? Unless mma.sync is asked
// (set_selected_key_outer_mma), where wgmma_declines() has nothing against it.
// Measured (H200, BM_SelectedKoMma, one binary, two rounds; docs/performance.md),
// each with its best CTA size against mma.sync's: paper_kernel 8k 2.67 against
// 2.71 ms, 32k 11.3 against 11.2, 64k 22.3 against 22.8; m7c 64k 2.68
// against 2.75. Used synchronously (issue, wait) the MMAs save shared-memory
// reads and ldmatrix, not latency: the kernel stays latency-bound.
bool fwd_ko_wgmma() { return selected_wgmma(selected_key_outer_mma(), /*by_default=*/true); }

template <typename T, int DK, int DV, bool WG>
void launch_fwd_ko_sized(AttnParams& p) {
  if (fwd_ko_warps<T, DK, DV, WG>() == 8)
    launch_fwd_ko<T, DK, DV, 8, WG>(p);
  else
    launch_fwd_ko<T, DK, DV, 4, WG>(p);
}

template <typename T, int DK, int DV>
void launch_selected_key_outer(AttnParams& p) {
  if (fwd_ko_wgmma())
    launch_fwd_ko_sized<T, DK, DV, true>(p);
  else
    launch_fwd_ko_sized<T, DK, DV, false>(p);
}

template <typename T, int DK, int DV>
void launch_selected_key_outer_dq(AttnParams& p) {
  for_each_key_outer_chunk<T>(p, DK, /*with_lse=*/false, [&](const KoChunk& c, int64_t max_units) {
    launch_kernel(nsa_selected_bwd_dq_ko_kernel<T, DK, DV>, dim3(unsigned(max_units)), kTcThreads,
                  KoLayout<DK, DV, true>::kBytes, p, c);
    launch_merge<T, DK>(nsa_selected_bwd_dq_merge_kernel<T, DK>, p, c);
  });
}

// BackwardDq::slots: the dk/dv kernel wrote the partials for every query, one
// chunk the whole sequence long; the merge is dq's KeyOuter merge.
int64_t selected_dq_slots_bytes(const AttnParams& p, int dk, size_t elem_bytes) {
  return p.S * partial_bytes_per_query(p, dk, elem_bytes, /*with_lse=*/false);
}
bool selected_dq_slots_apply(Branch br, const AttnParams& p, int dk, size_t elem_bytes) {
  return br == Branch::Selected && selected_key_outer_applies(p) && p.rev_slot != nullptr &&
         selected_dq_slots_bytes(p, dk, elem_bytes) <= kSlotsBudgetBytes;
}
template <typename T, int DK, int DV>
void launch_selected_dq_slots_merge(const AttnParams& p) {
  KoChunk c;
  c.q_lo = 0, c.q_len = p.S, c.part = p.dq_part;
  launch_merge<T, DK>(nsa_selected_bwd_dq_merge_kernel<T, DK>, p, c);
}

#define NSA_KO_INSTANTIATE(DK, DV)                                                         \
  template void launch_selected_key_outer<c10::BFloat16, DK, DV>(AttnParams & p);          \
  template void launch_selected_key_outer<c10::Half, DK, DV>(AttnParams & p);              \
  template void launch_selected_key_outer_dq<c10::BFloat16, DK, DV>(AttnParams & p);       \
  template void launch_selected_key_outer_dq<c10::Half, DK, DV>(AttnParams & p);           \
  template void launch_selected_dq_slots_merge<c10::BFloat16, DK, DV>(const AttnParams& p); \
  template void launch_selected_dq_slots_merge<c10::Half, DK, DV>(const AttnParams& p);
NSA_TC_DIMS(NSA_KO_INSTANTIATE)
#undef NSA_KO_INSTANTIATE

}  // namespace nsa::cuda
