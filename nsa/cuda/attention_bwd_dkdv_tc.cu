// Attention backward dk/dv v2: tensor cores (mma.sync m16n8k16, fp32
// accumulators) for fp16 / bf16 inputs, for the three NSA branches. v1
// (attention_bwd_dkdv.cu) stays the kernel for fp32 and the head dims v2 does
// not tile; launch_attention_bwd_dkdv picks (NSA_CUDA_KERNEL_V1=1 forces v1).
//
// Key-centric, FlashAttention-2 style, with the row sets of v1: a CTA owns up
// to 64 keys of one (b, g) and streams every row (query, head of the group)
// that can see one of them, in ascending query order:
//   Window      queries [k0, k1 - 1 + w)                     64 keys per CTA
//   Compressed  queries [k0 d + l - 1, S)                    64 keys per CTA
//   Selected    the reverse index's queries of block j       one CTA per (block,
//               (rev_query / rev_offset, attention_launch.cpp) 64-key sub-tile)
// Each warp owns a 16-key slice of the tile (its dK, dV accumulators stay in
// registers for the whole kernel) and, per step of NR rows of a row tile,
//   S^T  = K Q^T, dP^T = V dO^T      tensor cores; K, V, Q, dO all via ldmatrix
//   P^T  = 2^(S^T scale log2e - lse log2e)   fp32, from the forward's lse; 0 for
//                                    an invisible (row, key) pair, a padding
//                                    row or key, or a row with lse = +inf
//   dV  += P^T dO                    P^T rounded to the input dtype straight from
//   dS^T = P^T (dP^T - delta)        the accumulators (C layout == A layout),
//   dK  += dS^T Q                    Q / dO via ldmatrix.trans
// and at the end dk = scale dK, dv = dV in the input dtype. Selected with
// sel_block <= 32 has fewer 16-key slices than warps: the warps then split the
// row steps too (warp = slice + slices * row group) and the partial dK, dV of
// the row groups are summed in shared memory in row-group order. Every key is
// written by exactly one CTA (zeros when no row saw it); the summation order is
// fixed and there are no atomics, so results are bitwise reproducible.
//
// With BackwardDq::atomic (nsa_{window,compressed,selected}_bwd_dkdvdq_tc_kernel,
// 3 CTAs per SM at 64/64) the kernel also makes dq, sparing the dq kernel's
// second computation of S and dP: after each row tile the warps' dS^T (rounded
// as dK's operand) sits in shared memory, each warp multiplies 16 of its rows
// by the key tile (dQ += dS K) and adds them to an fp32 accumulator in 16-byte
// atomics (add_tile_dq); one kernel then writes dq = scale * accumulator in the
// input dtype. The additions' order varies from run to run: dq is not
// reproducible bit for bit, and so where a key tile's rows split over CTAs
// the splits add dK·scale | dV to one fp32 accumulator in atomics too
// (AttnParams::dkdv_atomic) rather than each write a partial for the
// reduction to read back (H200, BM_SelectedBwdDq: m7c 8k -1.2 %, 64k -4.8 %,
// paper_kernel 8k -1.8 %; docs/performance.md), and the selected kernel's CTAs
// take near-equal shares of each key tile's rows from a work list
// (nsa_dkdv_items_kernel; m7c 64k -9.7 % more, 8k and paper_kernel within
// +-1 %). The layer asks it of the selected branch only (NSA_SELECTED_DQ): for
// the window and compressed branches it measured slower.
// BackwardDq::slots (selected, sel_block = 64: a (query, block) pair is one
// CTA's, one row tile's): the same units store each row's scale dS K, rounded
// to the input dtype, to the row's (query, slot, head) row of a partial buffer
// instead (the slot from the reverse index, loaded with the query), and the
// KeyOuter dq merge (selected_key_outer.cu) sums a query's slots in slot
// order: no atomics, bitwise reproducible. It did not make the kernel faster
// than atomics (paper_kernel 64k, H200: 64.6 ms against 61.6 with the merge;
// the fp32 atomics' ~100 GB of DRAM traffic was not what held it), but
// faster than the dq kernel it replaces for reproducible runs where its
// scratch is small (launch.cuh, kSlotsBudgetBytes).
//
// On Hopper (sm_90a) that selected kernel runs its four products as warpgroup
// MMAs instead (nsa_selected_bwd_dkdvdq_wg_kernel, wgmma.cuh): the 4 warps'
// 16-key slices are one warpgroup's M = 64 keys, so the tensor cores read each
// row step's Q and dO once for the 64 keys where every warp's ldmatrix read
// them for its 16 (and K, V once a step as the A operand from shared memory:
// no room for them in registers beside dK and dV at the paper's 192 / 128).
// S^T = K Q^T and dP^T = V dO^T take both operands from shared memory, dV +=
// P^T dO and dK += dS^T Q take P^T and dS^T from the accumulators (which have
// mma.sync's layout per warp, so the masking, exponentials and dS code is the
// same). The tiles are stored as core matrices: one stored Q tile is B of S^T
// (K-major) and B of dK (MN-major). A step of 32 rows up to dk + dv = 320 (no
// K / V fragments in registers). A step issues S^T and dP^T as two groups and
// waits for S^T alone, so that the softmax runs while dP^T is computed; it
// issues dV += P^T dO as soon as P^T is there and waits for dP^T only then;
// dV and dK are waited for with the next step's S^T. At RT = 64 rows a tile
// (dk + dv <= 256) dq's product is one warpgroup MMA (M = the tile's rows, A
// = dS by ldmatrix.trans, B = the key tile), whose wait completes the tile's
// last dV, dK; at RT = 32 it stays on mma.sync. H200, BM_SelectedBwdDq
// (docs/performance.md): the overlap -1.6 % at m7c 8k, then dq's MMA -3.3 %
// at 8k and -3.1 % at 64k. A step no row of which sees any of the 64 keys is
// skipped by all 4 warps together. The default at dk + dv <= 128 only
// (selected_dkdv_wgmma_by_default).
//
// Shared memory per CTA: the key tile (64 x (dk + 8) + 64 x (dv + 8) 16-bit
// elements, loaded once), two stages of RT rows of Q and dO (double-buffered
// cp.async; RT = 64, or 32 when dk + dv > 256) and per-row t / lse / delta
// (lse and delta by cp.async in the rows' group, t computed, or for Selected
// read from the reverse index one row tile ahead: no thread waits on a global
// load between tiles):
// 55 KB at 64/64, 104 KB at 128/128, 101 KB at 192/192, all <= kSmemBudget
// (112 KB). Each warp writes its 16 keys' dk, dv straight from its
// accumulators; only Selected with sel_block <= 32 (several row groups)
// first sums them in a reduction area (4 warps x 16 keys x (dk + dv)
// floats) aliasing the tiles once the row loop is done. With dq, each stage
// row's dq row (int64) and the row tile's dS^T follow: the warpgroup
// kernel's unpadded core tiles with them, 59.5 KB at 64/64, 86.3 KB at 192/128.
// Registers per thread: dK dk/2 + dV dv/2 fp32 accumulators + S, dP (NR/2 each;
// NR = 32 rows per step, 16 when dk + dv >= 320). Selected at 64/64 also holds
// the warp's K and V fragments (dk/4 + dv/4) for the whole kernel in its 168
// registers (3 CTAs per SM: min_ctas_per_sm, launch.cuh); the others re-read
// them from shared memory (ldmatrix) at every row step (Window / Compressed at
// 64/64: 128 registers, 4 CTAs). ptxas -v (CUDA 13.0, sm_90a): at 64/64 the
// capped dk/dv kernels spill 20-36 bytes, those with dq 0-4; no spill up to
// 128/128; the pairs with dk or dv = 192 sit at the 252-255 cap with 0-16
// bytes of spill (the warpgroup kernel: 0 at 192/128, 52 at 192/192).
#include <ATen/cuda/CUDAContextLight.h>  // getCurrentDeviceProperties
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <atomic>

#include <cub/block/block_scan.cuh>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/wgmma.cuh"

namespace nsa::cuda {

// Defined here, called by launch_attention_bwd_dkdv (attention_bwd_dkdv.cu):
// false, launching nothing, when v1 must run (fp32, other dims, unaligned
// tensors, force_v1_kernels()).
bool launch_attention_bwd_dkdv_tc(Branch br, at::ScalarType dtype, AttnParams& p);

namespace {

using tc::kLog2e;
using tc::kTcThreads;
using tc::kTcWarps;
constexpr int kKeys = 64;  // keys per CTA (4 warps x 16)

// CORE (the warpgroup-MMA kernel): K, V, Q and dO tiles as wgmma's core
// matrices, unpadded (wgmma.cuh); else rows padded for ldmatrix.
template <int DK, int DV, bool CORE = false>
struct DkdvLayout {
  static constexpr int kRows = DK + DV > 256 ? 32 : 64;   // rows per stage (RT)
  // Rows per warp step (NR): 16 where S^T and dP^T (NR / 2 registers each) do
  // not fit beside dK and dV; the warpgroup kernel's registers (no K / V
  // fragments) take 32 up to dk + dv = 320 (no spill at 192/128).
  static constexpr int kStep = DK + DV < 320 || (CORE && DK + DV <= 320) ? 32 : 16;
  static constexpr int kPad = CORE ? 0 : tc::kSmemPad;
  static constexpr int kLdK = DK + kPad, kLdV = DV + kPad;
  static constexpr size_t kKvBytes = size_t(kKeys) * (kLdK + kLdV) * 2;
  static constexpr size_t kStageBytes = size_t(kRows) * (kLdK + kLdV) * 2;
  static constexpr size_t kMetaBytes = 2 * size_t(kRows) * 3 * 4;  // [2][RT] t, lse, delta
  static constexpr size_t kRedBytes = size_t(kTcWarps) * 16 * (DK + DV) * sizeof(float);
  static constexpr size_t kLoopBytes = kKvBytes + 2 * kStageBytes + kMetaBytes;
  static constexpr size_t kBytes = kLoopBytes > kRedBytes ? kLoopBytes : kRedBytes;
  static_assert(kBytes <= kSmemBudget, "dk/dv v2 tiles exceed the shared-memory budget");
  // With dq (BackwardDq::atomic): each stage row's dq row (b S + t) H + head,
  // [2][RT] int64, then the row tile's dS^T, [64 keys][RT] 16-bit, after the
  // loop's tiles; only where it still fits the budget.
  static constexpr int kLdS = kRows + tc::kSmemPad;
  static constexpr size_t kDqRowsBytes = 2 * size_t(kRows) * sizeof(int64_t);
  static constexpr size_t kDsBytes = size_t(kKeys) * kLdS * 2;
  // No reduction area: the kernels with dq have one row group and write dk, dv
  // from the accumulators.
  static constexpr size_t kBytesDq = kLoopBytes + kDqRowsBytes + kDsBytes;
  static constexpr bool kDqFits = kBytesDq <= kSmemBudget;
  static_assert(kRows % kStep == 0 && kTcThreads % kRows == 0, "row tile / step / loader mismatch");
};

// One unit's dQ rows r0 + gid, r0 + gid + 8, columns c0 .. c0 + NC (mma.sync's
// C layout in acc) into the accumulator (or with `slots` the rows' partials).
template <typename T, int DK, int NC>
__device__ __forceinline__ void put_unit_dq(const AttnParams& p, const float (&acc)[NC / 8][4], const int64_t* rows_dq,
                                            bool slots, int r0, int c0, int lane) {
  const int gid = lane / 4, tig = lane % 4;
  const bool odd = tig & 1;
  const int64_t mine = rows_dq[r0 + gid + (odd ? 8 : 0)];  // the tile's RT rows are all written
#pragma unroll
  for (int n = 0; n < NC / 8; ++n) {
    // Even lanes keep row gid (acc[n][0..1]) and give row gid + 8; odd lanes the reverse.
    const float x = __shfl_xor_sync(0xffffffffu, odd ? acc[n][0] : acc[n][2], 1);
    const float y = __shfl_xor_sync(0xffffffffu, odd ? acc[n][1] : acc[n][3], 1);
    if (mine < 0) continue;
    const float4 v4 = odd ? make_float4(x, y, acc[n][2], acc[n][3]) : make_float4(acc[n][0], acc[n][1], x, y);
    const int64_t at = mine * DK + c0 + 8 * n + 2 * (tig & ~1);
    if (slots) {  // the pair's own row: scale dS K, rounded once, written once
      uint2 packed;
      packed.x = tc::pack2<T>(v4.x * p.scale, v4.y * p.scale);
      packed.y = tc::pack2<T>(v4.z * p.scale, v4.w * p.scale);
      *reinterpret_cast<uint2*>(static_cast<T*>(p.dq_part) + at) = packed;
      continue;
    }
    float* dst = p.dq_accum + at;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float4*>(dst), v4);
#else
    atomicAdd(dst, v4.x), atomicAdd(dst + 1, v4.y), atomicAdd(dst + 2, v4.z), atomicAdd(dst + 3, v4.w);
#endif
  }
}

// dQ += dS K for the row tile's rows (BackwardDq::atomic): the 4 warps' dS^T
// (64 keys x RT rows, `ds`) is complete; the warps take units of 16 rows x
// kCols columns of dq in turn (the warpgroup kernel at RT = 64: one
// warpgroup MMA, below), each reading dS as A fragments (transposed from
// ds) and K from the key tile, and add them to the fp32 accumulator in 16-byte
// atomics: the 4 lanes of a row pair exchange halves (shfl) so that even lanes
// add four columns of row gid and odd lanes four of row gid + 8. Padding rows
// (dq row -1) add nothing. With `slots` (BackwardDq::slots) the same four
// columns, times scale and rounded to T, are stored to the row's partial row
// instead (its (query, slot, head) row of p.dq_part), no atomics. The rows'
// dq rows come from shared memory, written with the tile's copies: ncu (paper_kernel 8k, H200) had a unit issue 216
// instructions for its 16 MMAs and 12 ldmatrix, a run-time modulo for each
// row's head and the two rows in local memory among them (42 % of the
// kernel's instructions; scripts/ncu_hotspots.py, code by trip count).
// Units of 64 columns where they come out a multiple of the warps, else of
// 32: at RT = 32 and dk = 192 (the paper's heads) 6 units of 64 left 2 of the
// 4 warps waiting for half the time; 12 of 32 go 3 a warp.
template <typename T, int DK, int RT, int LDS, int LDK, bool CORE>
__device__ __forceinline__ void add_tile_dq(const AttnParams& p, const T* ds, const T* Ks, const int64_t* rows_dq,
                                            bool slots, int n_here, int warp, int lane) {
  if constexpr (CORE && RT == kKeys) {
    // The warpgroup kernel at RT = 64: the tile's 64 rows are one warpgroup
    // MMA's M, warp w's rows 16 w .. as A (dS by ldmatrix.trans), B the key
    // tile's core matrices, N = dk: four MMAs a warpgroup where each warp
    // issued 32 mma.sync and loaded B by 16 ldmatrix. Every warp takes part,
    // rows past n_here included (their dq rows are -1: nothing added). The
    // wait completes the tile's last dV, dK too (groups complete in order).
    uint32_t a[kKeys / 16][4];
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) tc::ldmatrix_a_frag_trans<T, LDS>(a[kk], ds, kk * 16, 16 * warp, lane);
    float acc[DK / 8][4];
#pragma unroll
    for (int n = 0; n < DK / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    wg::fence();
    wg::fence_operands(acc);
    wg::warpgroup_a_b_issue<T, kKeys, DK>(acc, a, Ks);
    wg::commit();
    wg::wait<0>();
    wg::fence_operands(acc);
    put_unit_dq<T, DK, DK>(p, acc, rows_dq, slots, 16 * warp, 0, lane);
    return;
  }
  constexpr int kCols = (RT / 16) * (DK / 64) % kTcWarps == 0 ? 64 : 32;
  constexpr int kChunks = DK / kCols;
  const int n_units = ceil_div(n_here, 16) * kChunks;
  for (int u = warp; u < n_units; u += kTcWarps) {
    const int r0 = u / kChunks * 16, c0 = u % kChunks * kCols;
    float acc[kCols / 8][4];
#pragma unroll
    for (int n = 0; n < kCols / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t a[4];
      tc::ldmatrix_a_frag_trans<T, LDS>(a, ds, kk * 16, r0, lane);
      if constexpr (CORE)
        wg::warp_a_b_step_core<T, kCols, DK>(acc, a, Ks, kk * 16, c0, lane);
      else
        tc::warp_a_b_step<T, kCols, LDK>(acc, a, Ks, kk * 16, c0, lane);
    }
    put_unit_dq<T, DK, kCols>(p, acc, rows_dq, slots, r0, c0, lane);
  }
}

// A row split's pair of dK·scale | dV columns: stored to the split's partial,
// or (add: AttnParams::dkdv_atomic) added to the one fp32 accumulator that
// every split of the key tile adds to; 8-byte atomics on sm_90, where four
// lanes fill a 32-byte sector as the stores do.
__device__ __forceinline__ void put_split_pair(float* dst, float2 v, bool add) {
  if (!add) {
    *reinterpret_cast<float2*>(dst) = v;
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(dst), v);
#else
  atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y);
#endif
}

// kDq (BackwardDq::atomic): also dQ += dS K into p.dq_accum for every row tile
// (add_tile_dq), one barrier more per tile; 4 key slices only (Selected:
// sel_block a multiple of 64). WG (sm_90a, with kDq): the products on
// warpgroup MMAs over core-matrix tiles (the file's head).
template <typename T, int DK, int DV, Branch BR, bool kDq = false, bool WG = false>
__device__ __forceinline__ void tc_dkdv_body(const AttnParams& p) {
  static_assert(!WG || kDq, "the warpgroup kernel is the one with dq");
  using L = DkdvLayout<DK, DV, WG>;
  constexpr int RT = L::kRows, NR = L::kStep, kTpr = kTcThreads / RT;  // loader threads per row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);                       // [64][kLdK]
  T* Vs = Ks + kKeys * L::kLdK;                                 // [64][kLdV]
  T* Qs = Vs + kKeys * L::kLdV;                                 // [2][RT][kLdK]
  T* dOs = Qs + 2 * RT * L::kLdK;                               // [2][RT][kLdV]
  int* row_t = reinterpret_cast<int*>(dOs + 2 * RT * L::kLdV);  // [2][RT], -1: padding row
  float* row_lse = reinterpret_cast<float*>(row_t + 2 * RT);    // [2][RT], natural log as the forward wrote it
  float* row_delta = row_lse + 2 * RT;                          // [2][RT]
  int64_t* row_dq = reinterpret_cast<int64_t*>(row_delta + 2 * RT);  // kDq: [2][RT], dq (or partial) row, -1: padding
  T* ds = reinterpret_cast<T*>(row_dq + 2 * RT);                      // kDq: [64 keys][kLdS], dS^T of the row tile
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(p.dout);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  // This CTA's keys [k0, k1), its queries, and its 16-key slices: 1, 2 or 4
  // for a selected block (3 -> 4: the warps must split evenly).
  const KeyCta cta = KeyCta::make<BR>(p, kKeys);
  const int b = cta.b, g = cta.g, k0 = cta.k0, k1 = cta.k1, n_q = cta.n_q;
  int n_slices = kTcWarps;
  if (BR == Branch::Selected) {
    n_slices = imin(kTcWarps, ceil_div(p.sel_block, 16));
    if (n_slices == 3) n_slices = 4;
  }
  if (k0 >= k1) return;  // a sub-tile past the end of the sequence: owns no key
  const int slice = warp % n_slices, row_group = warp / n_slices, n_groups = kTcWarps / n_slices;
  const bool slice_active = slice < ceil_div(k1 - k0, 16);  // the slice holds a key
  if constexpr (kDq) {
    // A slice past the block's end adds zeros to every row's dQ (its K rows
    // are zero-filled, but its dS must not be stale shared memory).
    if (!slice_active)
      for (int e = lane; e < 16 * RT / 2; e += 32)
        *reinterpret_cast<uint32_t*>(ds + (slice * 16 + e / (RT / 2)) * L::kLdS + 2 * (e % (RT / 2))) = 0u;
  }
  const int n_rows = n_q * p.h;                             // row = (query index, head)
  // This CTA's row tiles [tile0, tile1): all of them, or its split's share.
  const int n_tiles_all = ceil_div(n_rows, RT);
  const int tile0 = int(int64_t(n_tiles_all) * cta.split / cta.splits);
  const int tile1 = int(int64_t(n_tiles_all) * (cta.split + 1) / cta.splits);

  // The query of this thread's row in tile i (a thread copies the same row of
  // every tile), -1 past the rows: for Selected a load from the reverse index,
  // made one tile before the copies that need it (next_t).
  // With BackwardDq::slots also the entry's slot in the query's block_idx row
  // (the reverse index's, loaded beside the query).
  const bool slots = kDq && p.dq_part != nullptr;
  const auto query_of = [&](int i) {
    const int ri = i * RT + tid / kTpr;
    return ri < n_rows ? cta.query(ri / p.h) : -1;
  };
  const auto slot_of = [&](int i) {
    const int ri = i * RT + tid / kTpr;
    return slots && ri < n_rows ? cta.slot_list[ri / p.h] : 0;
  };
  int next_t = tile0 < tile1 ? query_of(tile0) : -1;
  int next_slot = tile0 < tile1 ? slot_of(tile0) : 0;
  const auto issue_rows = [&](int i) {
    const int stage = i & 1, r = tid / kTpr, part = tid % kTpr, ri = i * RT + r;
    const bool valid = ri < n_rows;
    const int t = next_t, slot = next_slot;
    next_t = i + 1 < tile1 ? query_of(i + 1) : -1;
    next_slot = i + 1 < tile1 ? slot_of(i + 1) : 0;
    const int hq = g * p.h + (valid ? ri % p.h : 0), ts = valid ? t : 0;
    const T* qsrc = q + row_offset(b, ts, hq, p.S, p.H, DK);
    const T* osrc = dout + row_offset(b, ts, hq, p.S, p.H, DV);
    if constexpr (WG) {
      wg::copy_row_core_async<DK, kTpr>(Qs + stage * RT * DK, r, qsrc, valid, part);
      wg::copy_row_core_async<DV, kTpr>(dOs + stage * RT * DV, r, osrc, valid, part);
    } else {
      tc::copy_row_async<DK, kTpr>(Qs + (stage * RT + r) * L::kLdK, qsrc, valid, part);
      tc::copy_row_async<DV, kTpr>(dOs + (stage * RT + r) * L::kLdV, osrc, valid, part);
    }
    if (part == 0) {
      // A padding row's lse and delta arrive as zeros; its t = -1 masks it.
      const int64_t li = (int64_t(b) * p.S + ts) * p.H + hq;
      row_t[stage * RT + r] = t;
      tc::cp_async_4(row_lse + stage * RT + r, p.lse + li, valid);
      tc::cp_async_4(row_delta + stage * RT + r, p.delta + li, valid);
      if constexpr (kDq) {
        // The row's dq row, or with slots its partial row (b, t, g, slot, head).
        const int64_t pr = (((int64_t(b) * p.S + ts) * p.G + g) * p.n_sel + slot) * p.h + (valid ? ri % p.h : 0);
        row_dq[stage * RT + r] = !valid ? -1 : slots ? pr : li;
      }
    }
    tc::cp_async_commit();
  };

  float dk_acc[DK / 8][4], dv_acc[DV / 8][4];
#pragma unroll
  for (int n = 0; n < DK / 8; ++n) dk_acc[n][0] = dk_acc[n][1] = dk_acc[n][2] = dk_acc[n][3] = 0.f;
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) dv_acc[n][0] = dv_acc[n][1] = dv_acc[n][2] = dv_acc[n][3] = 0.f;

  if (tile0 < tile1) {  // the key tile (2 threads per key row) joins the first row tile's group
    const int r = tid / 2, key = k0 + r;
    const bool valid = key < k1;
    const int src = valid ? key : k0;
    const T* ksrc = k + row_offset(b, src, g, p.Sk, p.G, DK);
    const T* vsrc = v + row_offset(b, src, g, p.Sk, p.G, DV);
    if constexpr (WG) {
      wg::copy_row_core_async<DK, 2>(Ks, r, ksrc, valid, tid & 1);
      wg::copy_row_core_async<DV, 2>(Vs, r, vsrc, valid, tid & 1);
    } else {
      tc::copy_row_async<DK>(Ks + r * L::kLdK, ksrc, valid, tid & 1);
      tc::copy_row_async<DV>(Vs + r * L::kLdV, vsrc, valid, tid & 1);
    }
    issue_rows(tile0);
  }
  const float scale_log2 = p.scale * kLog2e;
  // With room for them (3 CTAs per SM at 64/64, launch.cuh), the warp's 16 keys
  // of K and V stay in registers as A fragments from the first row tile on,
  // where every row step re-read them by ldmatrix (8 of its 40 shared loads).
  constexpr bool kHoldKv = !WG && DK + DV <= 128 && min_ctas_per_sm<TcFamily::Dkdv, BR, DK, DV>() <= 3;
  uint32_t kf[kHoldKv ? DK / 16 : 1][4], vf[kHoldKv ? DV / 16 : 1][4];
  const int kr0 = slice * 16;                          // the warp's key rows in Ks / Vs
  const int kw0 = k0 + kr0, kw1 = imin(kw0 + 16, k1);  // its keys [kw0, kw1)
  for (int i = tile0; i < tile1; ++i) {
    if (i + 1 < tile1) {
      issue_rows(i + 1);
      tc::cp_async_wait<1>();
    } else {
      tc::cp_async_wait<0>();
    }
    if constexpr (WG) wg::fence_proxy_async();  // the copies, seen by the MMAs' reads
    __syncthreads();
    if constexpr (kHoldKv) {
      if (i == tile0 && slice_active) {  // the key tile arrived with the first row tile
        tc::ldmatrix_a_frags<T, DK, L::kLdK>(kf, Ks, kr0, lane);
        tc::ldmatrix_a_frags<T, DV, L::kLdV>(vf, Vs, kr0, lane);
      }
    }
    const int stage = i & 1, n_here = imin(RT, n_rows - i * RT);
    const T* qs = Qs + stage * RT * L::kLdK;
    const T* os = dOs + stage * RT * L::kLdV;
    const int* ts = row_t + stage * RT;
    const float* lse = row_lse + stage * RT;
    const float* delta = row_delta + stage * RT;
    // WG: the warpgroup's MMAs need all 4 warps at every step, so no warp
    // leaves the loop alone (a slice without keys is masked to zeros instead).
    for (int s = row_group; (WG || slice_active) && s < RT / NR; s += n_groups) {
      const int row0 = s * NR;
      if (row0 >= n_here) break;
      const int tf = ts[row0], tl = ts[imin(row0 + NR, n_here) - 1];  // rows ascend in t
      // No row of the step sees a key of the warp (warp-uniform); WG: a key of
      // the CTA (from its first key k0, CTA-uniform).
      const int kn0 = WG ? k0 : kw0;
      bool none;
      if (BR == Branch::Window)
        none = tl < kn0 || kw1 - 1 <= tf - p.window;
      else if (BR == Branch::Compressed)
        none = kn0 * p.cmp_stride + p.cmp_block - 1 > tl;
      else
        none = kn0 > tl;
      if (none) {
        if constexpr (kDq) {  // no row of the step sees the warp's keys: their dS is 0
#pragma unroll
          for (int n = 0; n < NR / 8; ++n)
#pragma unroll
            for (int i = 0; i < 2; ++i)
              *reinterpret_cast<uint32_t*>(ds + (kr0 + gid + 8 * i) * L::kLdS + row0 + 8 * n + 2 * tig) = 0u;
        }
        continue;
      }
      // Does every row of the step see all 16 keys of the warp (warp-uniform)?
      // Then no per-element test: no padding row, no key past the end, and the
      // extreme rows (tf, tl) reach the extreme keys.
      bool all = row0 + NR <= n_here && kw1 - kw0 == 16;
      if (BR == Branch::Window)
        all = all && kw1 - 1 <= tf && kw0 > tl - p.window;
      else if (BR == Branch::Compressed)
        all = all && (kw1 - 1) * p.cmp_stride + p.cmp_block - 1 <= tf;
      else
        all = all && kw1 - 1 <= tf;  // the reverse index lists only queries that chose the block

      float sp[NR / 8][4], dp[NR / 8][4];  // S^T -> P^T; dP^T -> dS^T (16 keys x NR rows)
      // WG: the step's rows in the core-matrix tiles (row0 a multiple of 8).
      const T* q_rows = qs + wg::core_offset<DK>(row0, 0);
      const T* o_rows = os + wg::core_offset<DV>(row0, 0);
      if constexpr (WG) {
        // S^T and dP^T for the 64 keys, two groups: the softmax below runs
        // while dP^T is still on the tensor cores. The wait for S^T completes
        // the last step's dV, dK too (groups complete in order).
        wg::fence();
        wg::warpgroup_ss_bt_issue<T, DK, NR>(sp, Ks, q_rows);
        wg::commit();
        wg::warpgroup_ss_bt_issue<T, DV, NR>(dp, Vs, o_rows);
        wg::commit();
        wg::wait<1>();
        wg::fence_operands(sp);
        wg::fence_operands(dv_acc);
        wg::fence_operands(dk_acc);
      } else if constexpr (kHoldKv) {
        tc::warp_a_bt<T, DK, NR, L::kLdK>(sp, kf, qs, row0, lane);
      } else {
        tc::warp_smem_a_bt<T, DK, NR, L::kLdK, L::kLdK>(sp, Ks, kr0, qs, row0, lane);
      }
      // Element (n, j): key kw0 + gid + 8 (j / 2), row row0 + 8 n + 2 tig + j % 2.
      // The rows' logsumexp in the log2 domain (lse = +inf: P = 0), the thread's
      // two rows per 8-row column block.
      float lse2[NR / 8][2];
#pragma unroll
      for (int n = 0; n < NR / 8; ++n) {
        lse2[n][0] = lse[row0 + 8 * n + 2 * tig] * kLog2e;
        lse2[n][1] = lse[row0 + 8 * n + 2 * tig + 1] * kLog2e;
      }
      if (all) {
#pragma unroll
        for (int n = 0; n < NR / 8; ++n) {
#pragma unroll
          for (int j = 0; j < 4; ++j) sp[n][j] = tc::exp2_ftz(fmaf(sp[n][j], scale_log2, -lse2[n][j % 2]));
        }
      } else {
#pragma unroll
        for (int n = 0; n < NR / 8; ++n) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int key = kw0 + gid + 8 * (j / 2), r = row0 + 8 * n + 2 * tig + j % 2, t = ts[r];
            const bool vis = t >= 0 && key < k1 && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride);
            sp[n][j] = vis ? tc::exp2_ftz(fmaf(sp[n][j], scale_log2, -lse2[n][j % 2])) : 0.f;
          }
        }
      }
      if constexpr (WG) {  // dV += P^T dO on the tensor cores while dS^T waits for dP^T
        wg::fence();
        wg::fence_operands(dv_acc);
        wg::warpgroup_c_b_issue<T, NR, DV>(dv_acc, sp, o_rows);
        wg::commit();
        wg::wait<1>();  // dP^T; dV runs on
        wg::fence_operands(dp);
      } else {
        tc::warp_c_b<T, DV, NR, L::kLdV>(dv_acc, sp, os, row0, lane);
        if constexpr (kHoldKv)
          tc::warp_a_bt<T, DV, NR, L::kLdV>(dp, vf, os, row0, lane);
        else
          tc::warp_smem_a_bt<T, DV, NR, L::kLdV, L::kLdV>(dp, Vs, kr0, os, row0, lane);
      }
#pragma unroll
      for (int n = 0; n < NR / 8; ++n) {
#pragma unroll
        for (int j = 0; j < 4; ++j) dp[n][j] = sp[n][j] * (dp[n][j] - delta[row0 + 8 * n + 2 * tig + j % 2]);
      }
      if constexpr (WG) {  // dK += dS^T Q; it and dV waited for with the next step's S^T
        wg::fence();
        wg::fence_operands(dk_acc);
        wg::warpgroup_c_b_issue<T, NR, DK>(dk_acc, dp, q_rows);
        wg::commit();
      } else {
        tc::warp_c_b<T, DK, NR, L::kLdK>(dk_acc, dp, qs, row0, lane);
      }
      if constexpr (kDq) {  // dS^T (keys x rows, rounded as dK's operand was) for the tile's dQ
#pragma unroll
        for (int n = 0; n < NR / 8; ++n)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            *reinterpret_cast<uint32_t*>(ds + (kr0 + gid + 8 * i) * L::kLdS + row0 + 8 * n + 2 * tig) =
                tc::pack2<T>(dp[n][2 * i], dp[n][2 * i + 1]);
      }
    }
    if constexpr (kDq) {
      __syncthreads();  // every warp's dS^T of the tile is in ds
      // WG: the tile's last dV += P^T dO, dK += dS^T Q still run on the tensor
      // cores meanwhile (they read the stage's Q and dO, not ds or K); at RT =
      // 64 dq's own warpgroup MMA queues behind them.
      add_tile_dq<T, DK, RT, L::kLdS, L::kLdK, WG>(p, ds, Ks, row_dq + stage * RT, slots, n_here, warp, lane);
    }
    if constexpr (WG) {  // the tile's last dV, dK, before the barrier that frees its stage
      wg::wait<0>();
      wg::fence_operands(dv_acc);
      wg::fence_operands(dk_acc);
    }
    __syncthreads();  // the stage (and ds) are free for tile i + 2 (i + 1)
  }

  constexpr int kLdR = DK + DV;
  T* dk = static_cast<T*>(p.dk_out);
  T* dv = static_cast<T*>(p.dv_out);
  if (kDq || n_groups == 1) {
    // One row group (4 slices: every kernel but Selected's with sel_block <=
    // 32; always with dq): the warp alone holds its 16 keys' dK and dV,
    // written from the accumulators (rows gid, gid + 8; columns 8 n + 2 tig, a
    // 32-byte sector per key row and n) with no shared-memory pass. ncu
    // (H200, the selected kernel with dq) had the pass below at 23 % of m7c
    // 8k's instructions (CTAs of few row tiles: 16 row splits) and 10 % of
    // paper_kernel 8k's.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int key = kw0 + gid + 8 * i;
      if (key >= k1) continue;
      if (p.dkdv_partial != nullptr) {  // a split's partial (or its share of the accumulator), reduced after
        const bool add = kDq && p.dkdv_atomic;
        float* dst = p.dkdv_partial + ((int64_t(add ? 0 : cta.split) * p.B + b) * p.Sk + key) * p.G * kLdR +
                     int64_t(g) * kLdR + 2 * tig;
#pragma unroll
        for (int n = 0; n < DK / 8; ++n)
          put_split_pair(dst + 8 * n, make_float2(dk_acc[n][2 * i] * p.scale, dk_acc[n][2 * i + 1] * p.scale), add);
#pragma unroll
        for (int n = 0; n < DV / 8; ++n)
          put_split_pair(dst + DK + 8 * n, make_float2(dv_acc[n][2 * i], dv_acc[n][2 * i + 1]), add);
      } else {
        T* dkr = dk + row_offset(b, key, g, p.Sk, p.G, DK) + 2 * tig;
        T* dvr = dv + row_offset(b, key, g, p.Sk, p.G, DV) + 2 * tig;
#pragma unroll
        for (int n = 0; n < DK / 8; ++n)
          *reinterpret_cast<uint32_t*>(dkr + 8 * n) =
              tc::pack2<T>(dk_acc[n][2 * i] * p.scale, dk_acc[n][2 * i + 1] * p.scale);
#pragma unroll
        for (int n = 0; n < DV / 8; ++n)
          *reinterpret_cast<uint32_t*>(dvr + 8 * n) = tc::pack2<T>(dv_acc[n][2 * i], dv_acc[n][2 * i + 1]);
      }
    }
    return;
  }
  // Several row groups: partial sums -> shared [warp][16 keys][dk + dv]
  // floats (aliasing the tiles), then row groups summed in order per key and
  // written as pairs.
  float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float* row = red + (warp * 16 + gid + 8 * i) * kLdR + 2 * tig;
#pragma unroll
    for (int n = 0; n < DK / 8; ++n) row[n * 8] = dk_acc[n][2 * i], row[n * 8 + 1] = dk_acc[n][2 * i + 1];
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) row[DK + n * 8] = dv_acc[n][2 * i], row[DK + n * 8 + 1] = dv_acc[n][2 * i + 1];
  }
  __syncthreads();
  for (int e = tid; e < kKeys * kLdR / 2; e += kTcThreads) {
    const int c = e / (kLdR / 2), col = 2 * (e % (kLdR / 2)), key = k0 + c;
    if (key >= k1) continue;
    float s0 = 0.f, s1 = 0.f;
    for (int rg = 0; rg < n_groups; ++rg) {
      const float* src = red + ((rg * n_slices + c / 16) * 16 + c % 16) * kLdR + col;
      s0 += src[0], s1 += src[1];
    }
    if (p.dkdv_partial != nullptr) {  // a split's partial, summed by nsa_dkdv_reduce_kernel
      const float f = col < DK ? p.scale : 1.f;
      float2* dst = reinterpret_cast<float2*>(
          p.dkdv_partial + ((int64_t(cta.split) * p.B + b) * p.Sk + key) * p.G * kLdR + int64_t(g) * kLdR + col);
      *dst = make_float2(s0 * f, s1 * f);
    } else if (col < DK) {
      *reinterpret_cast<uint32_t*>(dk + row_offset(b, key, g, p.Sk, p.G, DK) + col) =
          tc::pack2<T>(s0 * p.scale, s1 * p.scale);
    } else {
      *reinterpret_cast<uint32_t*>(dv + row_offset(b, key, g, p.Sk, p.G, DV) + col - DK) = tc::pack2<T>(s0, s1);
    }
  }
}

NSA_TC_BRANCH_KERNELS(bwd_dkdv, tc_dkdv_body, TcFamily::Dkdv)

// dk, dv and dq (BackwardDq::atomic), names of their own for the traces
// (nsa_{window,compressed,selected}_bwd_dkdvdq_tc_kernel); empty for the head
// dims whose tiles leave no room for dS^T (never launched).
template <typename T, int DK, int DV, Branch BR>
__device__ __forceinline__ void tc_dkdvdq_body(const AttnParams& p) {
  if constexpr (DkdvLayout<DK, DV>::kDqFits) tc_dkdv_body<T, DK, DV, BR, true>(p);
}
NSA_TC_BRANCH_KERNELS_AS(bwd_dkdvdq, tc, tc_dkdvdq_body, TcFamily::DkdvDq)

// The selected dk, dv and dq on warpgroup MMAs (the file's head): sm_90a
// code only, empty elsewhere and for the head dims the mma.sync kernel with dq
// leaves to the dq kernel (never launched there: LaunchDkdv).
template <int DK, int DV>
constexpr bool kWgDkdvDq = DkdvLayout<DK, DV>::kDqFits && DkdvLayout<DK, DV, true>::kDqFits;
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads, (min_ctas_per_sm<TcFamily::DkdvDq, Branch::Selected, DK, DV>()))
    nsa_selected_bwd_dkdvdq_wg_kernel(AttnParams p) {
#if NSA_WGMMA_DEVICE
  if constexpr (kWgDkdvDq<DK, DV>) tc_dkdv_body<T, DK, DV, Branch::Selected, true, true>(p);
#endif
}
// The compressed branch's dk, dv and dq on the same warpgroup MMAs: its key
// tiles see a contiguous run of queries (KeyCta), so only the rows and the
// mask differ from the selected kernel's; the same register budget.
template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads, (min_ctas_per_sm<TcFamily::DkdvDq, Branch::Selected, DK, DV>()))
    nsa_compressed_bwd_dkdvdq_wg_kernel(AttnParams p) {
#if NSA_WGMMA_DEVICE
  if constexpr (kWgDkdvDq<DK, DV>) tc_dkdv_body<T, DK, DV, Branch::Compressed, true, true>(p);
#endif
}

// dq = scale * the fp32 accumulator, in the input dtype, two elements per
// thread (the dq kernel's rounding: scale applied in fp32, then one rounding).
template <typename T>
__global__ void nsa_dq_accum_to_output_kernel(const AttnParams p) {
  const int64_t n = int64_t(p.B) * p.S * p.H * p.dk;
  const int64_t e = 2 * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (e >= n) return;
  const float2 v = *reinterpret_cast<const float2*>(p.dq_accum + e);
  *reinterpret_cast<uint32_t*>(static_cast<T*>(p.dq_out) + e) = tc::pack2<T>(v.x * p.scale, v.y * p.scale);
}

// dk | dv = Σ_z partial[z] in split order (fp32), one column pair per thread;
// dK's scale is already in the partials.
template <typename T>
__global__ void nsa_dkdv_reduce_kernel(const AttnParams p) {
  const int cols = p.dk + p.dv;
  const int64_t per_split = int64_t(p.B) * p.Sk * p.G * cols;
  const int64_t e = 2 * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (e >= per_split) return;
  float s0 = 0.f, s1 = 0.f;
  for (int z = 0; z < p.row_splits; ++z) {
    const float2 v = *reinterpret_cast<const float2*>(p.dkdv_partial + z * per_split + e);
    s0 += v.x, s1 += v.y;
  }
  const int64_t row = e / cols;  // (b, key, g)
  const int col = int(e % cols);
  T* dst = col < p.dk ? static_cast<T*>(p.dk_out) + row * p.dk + col
                      : static_cast<T*>(p.dv_out) + row * p.dv + (col - p.dk);
  *reinterpret_cast<uint32_t*>(dst) = tc::pack2<T>(s0, s1);
}

// The selected dk/dv kernel's work list (AttnParams::dkdv_items), where dk and
// dv go to one accumulator in atomics (dq in atomics) and no split count is
// forced: key tile c = ((b, g), x) has rows_c = h times its block's
// reverse-index entries, ceil(rows_c / RT) row tiles, and splits into
// ceil(tiles_c / per_item) items of near-equal share; none where no query
// chose the block (the zeroed accumulator is then its dk, dv). Why: one split
// count for every key tile (the grid's z) must cut the heaviest — block 0,
// forced on every query, S h rows — fine enough not to be the kernel's tail,
// and so cut every light block as fine (at m7c 8k, 16 splits of ~6 row tiles
// each, each split loading its K, V tile and adding a 64-key dK, dV). One CTA:
// each thread counts a stretch of key tiles, a block scan gives each its first
// item, then it writes them, a key tile's items side by side. The CTAs start
// in list order (GridSlot's heavy-first order has nothing to order: the items
// are near-equal).
constexpr int kItemThreads = 1024;
__global__ void __launch_bounds__(kItemThreads)
    nsa_dkdv_items_kernel(const AttnParams p, int n_tiles, int rows_per_tile, int per_item, int max_items,
                          int4* items, int* n_items) {
  using Scan = cub::BlockScan<int, kItemThreads>;
  __shared__ typename Scan::TempStorage scan;
  const int tiles_per_block = ceil_div(p.sel_block, kKeys);
  const int n_kc = n_tiles * p.B * p.G, stretch = ceil_div(n_kc, kItemThreads);
  const int c0 = imin(int(threadIdx.x) * stretch, n_kc), c1 = imin(c0 + stretch, n_kc);
  const auto items_of = [&](int c) {
    const int64_t key = int64_t(c / n_tiles) * p.n_blocks + c % n_tiles / tiles_per_block;  // (b, g, block)
    const int rows = int(p.rev_offset[key + 1] - p.rev_offset[key]) * p.h;  // <= S h
    return ceil_div(ceil_div(rows, rows_per_tile), per_item);
  };
  int mine = 0;
  for (int c = c0; c < c1; ++c) mine += items_of(c);
  int first = 0, total = 0;
  Scan(scan).ExclusiveSum(mine, first, total);
  if (total > max_items) __trap();  // the host's bound is wrong: fail loudly rather than drop rows
  for (int c = c0; c < c1; ++c) {
    const int n = items_of(c);
    for (int z = 0; z < n; ++z) items[first++] = make_int4(c % n_tiles, c / n_tiles, z, n);
  }
  if (threadIdx.x == 0) *n_items = total;
}
// Items per resident CTA slot the work list aims at: room for the hardware to
// even out items that run unequally (rows skipped, partly visible steps).
// H200, BM_SelectedBwdItemWaves (docs/performance.md): 1 or 2 a slot leave the
// kernel a tail (m7c 8k +21 % / +9 %); 3 to 16 move m7c 8k, 64k and
// paper_kernel 8k by 2-4 % without a trend, one run's spread. 4 stays.
constexpr int kItemWaves = 4;
std::atomic<int> g_forced_item_waves{0};  // set_dkdv_item_waves; 0 = kItemWaves
// Resident CTAs per SM of the selected dk/dv + dq kernel the work list feeds
// (WG: the warpgroup one), worked out once a kernel on the device that first
// runs it, as fwd_ko_warps does (selected_key_outer.cu): no query at every
// launch, none inside a step graph's capture (it follows eager steps).
template <typename T, int DK, int DV, bool WG>
int selected_dkdvdq_ctas_per_sm(void (*kernel)(AttnParams), size_t smem) {
  static const int ctas = imax(resident_ctas_per_sm(kernel, kTcThreads, smem), 1);
  return ctas;
}

std::atomic<int> g_forced_row_splits{0};  // set_dkdv_row_splits; 0 = automatic
std::atomic<int> g_selected_mma{int(SelectedMma::Auto)};  // set_selected_dkdv_mma
std::atomic<int> g_compressed_mma{int(SelectedMma::Auto)};  // set_compressed_dkdv_mma
std::atomic<bool> g_last_compressed_wgmma{false};          // last_compressed_dkdv_wgmma
std::atomic<bool> g_last_selected_wgmma{false};           // last_selected_dkdv_wgmma
std::atomic<int> g_last_selected_splits{0};               // last_selected_dkdv_row_splits

// How many CTAs share a key tile's rows (each split costs an fp32 partial of
// dk|dv written and read once). Measured on an H100 (BM_{Selected,Compressed}
// BwdSplits, docs/performance.md), the key tiles are not only too few but
// unequal: a selected block is seen by the queries choosing it, and block 0
// (forced) by all S, against S·n/n_blocks on average; a compressed key tile by
// every later query. So Selected splits ~2·n_blocks/n ways, Compressed as if
// to fill 16 waves, Window (equal tiles of w + 64 queries) only to fill 2;
// at most 16 splits, >= 4 row tiles each for the longest tile, 2 GiB of
// partials. (16 rather than 8, measured at m7c: compressed 0.208 -> 0.187 ms at
// S = 2048 and 8.07 -> 7.45 ms at 64k, selected 14.80 -> 14.27 ms at 64k; 32
// splits gained no more at 2048 and lost for selected.) 2 GiB rather than 1:
// the selected branch at paper_kernel 64k needs 335 MB a split, and the cap
// held it to 3 (H200, BM_SelectedBwdMmaSplits, the kernel with dq: 61.5 ms at
// 3 splits, 52.0 at 4, 51.5 at 8, 52.8 at 16). The compressed branch's own
// cap stays 16 although its partial is small ([B, S_cmp, G, dk + dv], ~0.5 MB
// a split at m7c 8k): up to 64 (H200, BM_CompressedBwdSplits) took its
// backward at m7c 8k from 0.182 ms to 0.155 at 32 splits and 0.174 at 64, but
// the layer's forward + backward there +1.4 % at 64 (that backward runs beside
// the selected one; not measured further) and the training shape's compressed
// backward +18 % (batch 8: 8 splits best, 0.132 ms against 0.140 at 16); 32
// only there (<= 16 key CTAs, >= 512 row tiles) took the branch -14.9 % and
// the layer -0.2 % (within noise).
constexpr int64_t kPartialsBudget = int64_t(2) << 30;
int dkdv_row_splits(Branch br, const AttnParams& p, int key_ctas, int rows_per_tile) {
  if (const int forced = g_forced_row_splits.load(); forced > 0) return forced;
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const auto fill = [&](int64_t waves) { return (waves * sms + key_ctas - 1) / key_ctas; };
  int64_t s = br == Branch::Window     ? (key_ctas >= 2 * sms ? 1 : fill(2))
              : br == Branch::Selected ? std::max<int64_t>(fill(2), 2 * int64_t(p.n_blocks) / imax(1, p.n_sel))
                                       : fill(16);
  // The longest key tile's rows: window w + 64 queries, otherwise (nearly) all S.
  const int64_t rows = int64_t(br == Branch::Window ? imin(p.S, p.window + kKeys) : p.S) * p.h;
  const int64_t split_bytes = int64_t(p.B) * p.Sk * p.G * (p.dk + p.dv) * int64_t(sizeof(float));
  s = std::min<int64_t>({s, 16, rows / rows_per_tile / 4, kPartialsBudget / std::max<int64_t>(1, split_bytes)});
  return int(std::max<int64_t>(s, 1));
}

// Key-tiled: one CTA per 64 keys (of a selected block, for Selected) and (b, g),
// times the row splits.
struct LaunchDkdv {
  template <typename T, int DK, int DV>
  static bool run(Branch br, AttnParams& p) {
    using L = DkdvLayout<DK, DV>;
    const int n_tiles = br == Branch::Selected ? p.n_blocks * ceil_div(p.sel_block, kKeys) : ceil_div(p.Sk, kKeys);
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, at::cuda::current_device());
    // dq here too when asked and the 4 warps hold whole 64-key tiles with room
    // for dS^T; the caller runs the dq kernel otherwise (dq_done stays false).
    // Slots: the selected branch with one key tile a block (a pair is then
    // one CTA's, written once), the reverse index's slots, and its partials
    // within budget; where not, the reproducible dq kernel, not atomics.
    const bool with_dq = p.dq_in_dkdv && L::kDqFits && (br != Branch::Selected || p.sel_block % kKeys == 0) &&
                         (!p.dq_slots || selected_dq_slots_apply(br, p, DK, sizeof(T)));
    const bool dq_atomic = with_dq && !p.dq_slots;
    // The selected branch with dq in atomics splits each key tile by its own
    // rows (nsa_dkdv_items_kernel) unless a split count is forced.
    const bool items = dq_atomic && br == Branch::Selected && g_forced_row_splits.load() == 0;
    p.row_splits = items ? 1 : dkdv_row_splits(br, p, n_tiles * p.B * p.G, L::kRows);
    // dq in atomics: the row splits add dk, dv in atomics too, to an
    // accumulator after dq's in the same zeroed allocation. Measured (H200,
    // BM_SelectedBwdMmaSplits, docs/performance.md): at m7c 8k the 16 splits'
    // partials were 134 MB written and read again, at paper_kernel 8k 671 MB.
    p.dkdv_atomic = dq_atomic && (items || p.row_splits > 1);
    const int64_t n_dkdv = int64_t(p.B) * p.Sk * p.G * (DK + DV);  // one split's partial
    at::Tensor accum, part;  // stream-ordered like the partials
    if (with_dq && p.dq_slots) {
      part = at::empty({selected_dq_slots_bytes(p, DK, sizeof(T)) / int64_t(sizeof(T))},
                       f32.dtype(c10::CppTypeToScalarType<T>::value));
      p.dq_part = part.data_ptr();
    } else if (dq_atomic) {
      const int64_t n_dq = int64_t(p.B) * p.S * p.H * DK, n = n_dq + (p.dkdv_atomic ? n_dkdv : 0);
      accum = at::empty({n}, f32);
      p.dq_accum = accum.data_ptr<float>();
      if (p.dkdv_atomic) p.dkdv_partial = p.dq_accum + n_dq;
      NSA_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, size_t(n) * sizeof(float), stream));
    }
    at::Tensor partial;  // freed after the launches are queued: the allocator is stream-ordered
    if (p.row_splits > 1 && !p.dkdv_atomic) {
      partial = at::empty({int64_t(p.row_splits) * n_dkdv}, f32);
      p.dkdv_partial = partial.data_ptr<float>();
    }
    dim3 grid(n_tiles, p.B * p.G, p.row_splits);
    const bool wgmma =
        with_dq && kWgDkdvDq<DK, DV> &&
        ((br == Branch::Selected && selected_wgmma(selected_dkdv_mma(), selected_dkdv_wgmma_by_default(DK, DV))) ||
         (br == Branch::Compressed && dq_atomic &&
          selected_wgmma(compressed_dkdv_mma(), compressed_dkdv_wgmma_by_default(DK, DV))));
    if (br == Branch::Selected) g_last_selected_wgmma.store(wgmma), g_last_selected_splits.store(items ? 0 : p.row_splits);
    if (br == Branch::Compressed) g_last_compressed_wgmma.store(wgmma);
    void (*const kernel)(AttnParams) = !wgmma                    ? with_dq ? bwd_dkdvdq_tc_kernels<T, DK, DV>().pick(br)
                                                                           : bwd_dkdv_tc_kernels<T, DK, DV>().pick(br)
                                       : br == Branch::Selected ? nsa_selected_bwd_dkdvdq_wg_kernel<T, DK, DV>
                                                                : nsa_compressed_bwd_dkdvdq_wg_kernel<T, DK, DV>;
    const size_t smem = wgmma ? DkdvLayout<DK, DV, true>::kBytesDq : with_dq ? L::kBytesDq : L::kBytes;
    at::Tensor item_list;
    if (items) {
      // Items of about equal row tiles, kItemWaves of them per resident CTA
      // slot if every query chose n blocks (fewer at the causal start); the
      // grid is their upper bound, the CTAs past the count own nothing.
      const int per_sm = wgmma ? selected_dkdvdq_ctas_per_sm<T, DK, DV, true>(kernel, smem)
                               : selected_dkdvdq_ctas_per_sm<T, DK, DV, false>(kernel, smem);
      const int64_t slots = int64_t(per_sm) * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
      const int64_t n_kc = int64_t(n_tiles) * p.B * p.G;
      const int64_t tiles = int64_t(ceil_div(p.sel_block, kKeys)) * p.B * p.S * p.G * p.n_sel * p.h / L::kRows;
      const int forced_waves = g_forced_item_waves.load();
      const int64_t waves = forced_waves > 0 ? forced_waves : kItemWaves;
      const int64_t per_item = std::max<int64_t>(1, (tiles + waves * slots - 1) / (waves * slots));
      // sum_c ceil(ceil(rows_c / RT) / per_item) <= (tiles + n_kc) / per_item + n_kc.
      const int64_t max_items = (tiles + n_kc) / per_item + n_kc + 1;
      TORCH_CHECK(max_items < (int64_t(1) << 31), "selected dk/dv: ", max_items, " work items do not fit a grid");
      item_list = at::empty({4 * max_items + 1}, f32.dtype(at::kInt));
      int4* list = reinterpret_cast<int4*>(item_list.data_ptr<int>());
      int* count = item_list.data_ptr<int>() + 4 * max_items;
      nsa_dkdv_items_kernel<<<1, kItemThreads, 0, stream>>>(p, n_tiles, L::kRows, int(per_item), int(max_items),
                                                           list, count);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      p.dkdv_items = list, p.dkdv_n_items = count;
      grid = dim3(unsigned(max_items), 1, 1);
    }
    launch_kernel(kernel, grid, kTcThreads, smem, p);
    if (p.dkdv_partial != nullptr) {  // the accumulator is one split's partial to the reduction
      AttnParams r = p;
      if (p.dkdv_atomic) r.row_splits = 1;
      nsa_dkdv_reduce_kernel<T><<<unsigned((n_dkdv / 2 + 255) / 256), 256, 0, stream>>>(r);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (with_dq && p.dq_slots) {
      launch_selected_dq_slots_merge<T, DK, DV>(p);
      p.dq_done = true;
    } else if (with_dq) {
      const int64_t pairs = int64_t(p.B) * p.S * p.H * DK / 2;
      nsa_dq_accum_to_output_kernel<T><<<unsigned((pairs + 255) / 256), 256, 0, stream>>>(p);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      p.dq_done = true;
    }
    p.row_splits = 1, p.dkdv_partial = nullptr, p.dkdv_atomic = false, p.dq_accum = nullptr, p.dq_part = nullptr;
    p.dkdv_items = nullptr, p.dkdv_n_items = nullptr;
    return true;
  }
};

std::atomic<int> g_last_dkdv_version{0};

}  // namespace

int last_dkdv_kernel_version() { return g_last_dkdv_version.load(); }
void set_dkdv_row_splits(int n) {
  TORCH_CHECK(n >= 0 && n <= 64, "set_dkdv_row_splits: ", n, " is not in [0, 64]");
  g_forced_row_splits.store(n);
}
int dkdv_row_splits_forced() { return g_forced_row_splits.load(); }
void set_dkdv_item_waves(int n) {
  TORCH_CHECK(n >= 0 && n <= 64, "set_dkdv_item_waves: ", n, " is not in [0, 64]");
  g_forced_item_waves.store(n);
}
int dkdv_item_waves_forced() { return g_forced_item_waves.load(); }
void set_selected_dkdv_mma(SelectedMma mma) { g_selected_mma.store(int(mma)); }
SelectedMma selected_dkdv_mma() { return SelectedMma(g_selected_mma.load()); }
// At dk + dv <= 128 only. Measured (H200, BM_SelectedBwdMma, one binary on
// each of four machines; docs/performance.md): m7c (64/64) 2k / 8k / 64k
// 0.758 / 0.578 / 4.51 ms on mma.sync against 0.728 / 0.572 / 4.25 on wgmma;
// the paper's 192/128 at 64k 63.0 against 65.6 (8k 6.80 against 6.76) with 32
// rows a step and the last step's dV, dK beside dq's product, 63.1 against
// 66.0 with 16 rows a step. The MMAs are waited for before the softmax and dS
// that need them, and 2 CTAs an SM (8 warps; dK and dV hold 160 registers a
// thread) do not hide that.
bool selected_dkdv_wgmma_by_default(int dk, int dv) { return dk + dv <= 128; }
bool last_selected_dkdv_wgmma() { return g_last_selected_wgmma.load(); }
void set_compressed_dkdv_mma(SelectedMma mma) { g_compressed_mma.store(int(mma)); }
SelectedMma compressed_dkdv_mma() { return SelectedMma(g_compressed_mma.load()); }
bool compressed_dkdv_wgmma_by_default(int dk, int dv) { return dk + dv <= 128; }
bool last_compressed_dkdv_wgmma() { return g_last_compressed_wgmma.load(); }
int last_selected_dkdv_row_splits() { return g_last_selected_splits.load(); }

bool launch_attention_bwd_dkdv_tc(Branch br, at::ScalarType dtype, AttnParams& p) {
  return launch_v2_or_decline<LaunchDkdv>(br, dtype, p, {p.q, p.k, p.v, p.dout, p.dk_out, p.dv_out},
                                          g_last_dkdv_version);
}

}  // namespace nsa::cuda
