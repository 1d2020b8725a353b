// select_blocks v2: the same function as v1 (select_blocks.cu, DESIGN.md §2
// Eq. 9-10), with the q.kc scores on tensor cores (mma.sync m16n8k16, fp32
// accumulators) for fp16 / bf16 and dk in {64, 128, 192}. v1 runs everything
// else, and everything when force_v1_kernels() is on.
//
// Why: v1 takes one CTA per (b, t, g) and re-reads every compressed key of the
// group for every query, with FFMA. Here a CTA of 4 warps takes 64 rows =
// q_tile = 64 / h consecutive queries x all h heads of the group (all heads must
// be in one CTA: a block's importance sums over them), or 8 warps 128 rows
// (below), so each compressed-key tile staged in shared memory serves 64 or 128
// rows, and S = Q Kc^T runs on tensor cores (the warp tile of mma_tile.cuh, as
// in the v2 attention forward).
//
// Per CTA, two passes over the visible compressed keys in tiles of 64
// (double-buffered 16-byte cp.async, one barrier a tile: the copy of tile
// i + 1 is issued after it, into the stage every warp finished with in tile i - 1):
//   pass 1  S tile -> running row max m and row sum l of 2^(s - m) (fp32, log2
//           domain; s = q.kc * scale * log2 e, masked to keys i < n_cmp(t)).
//   pass 2  S tile again -> p = 2^(s - base), base = m + log2 l (one FFMA and
//           one MUFU a score; padding rows have base = +inf, p = 0, so a warp
//           whose real rows all see the whole tile tests no key), then each visible key's p
//           summed over the query's heads, and every selection block j whose
//           last overlapping visible key min(hi_j, n_cmp(t)) - 1 falls in this
//           tile is finished by one thread per (query, j), from a ring of the
//           last 128 keys' sums in shared memory. Two ways, by h (a launch's
//           choice):
//           Half sums, where h rounded up to 8 (hp) wastes at most a quarter of
//             the rows (h = 6 to 8, 12 to 16, and every h from 18): each query takes
//             hp rows, its heads then zero padding, so a half warp's 8 rows
//             (gid, or gid + 8, of one warp) are 8 rows of one query; the warp sums
//             its S tile's p over each half in registers (a reduce-scatter over
//             the gid lanes: 14 shuffles a half, one tree of the same shape for
//             every key) and writes one ring row per half, Ph[8][128]. At hp =
//             16 (a warp's 16 rows are one query) each lane first adds its two
//             rows' p (heads gid and gid + 8), then one reduce-scatter sums the
//             8 pairs into the query's first ring row: half the shuffles, and
//             the finishing reads one row; then
//               score = 0; for i = lo_j .. ascending:
//                 { col = 0; for each of the query's hp / 8 halves in order:
//                     col += Ph[half][i];  score += col; }
//           Otherwise (per-head sums, v1's order): p goes into a ring row per
//             (query, head), P[64][128], and
//               score = 0; for head in order: { acc = 0; for i = lo_j ..
//                 ascending: acc += p[head][i]; score += acc; }
//             up to four heads' sums side by side (each still over i ascending,
//             added in head order: the same bits as v1).
//           Either way equal contributions give bitwise-equal scores (ties
//           resolve as in the reference); the half sums differ from v1's in the
//           last bits, which only near-ties can see. Why the half sums: with a
//           64-row fp32 ring the CTA needed 104 KB of shared memory at dk 192
//           (2 CTAs, 8 warps per SM), and ncu showed the kernel latency-bound
//           there (paper_kernel at 64k: issue slots 30 % busy, 0.37 eligible
//           warps per scheduler); the 8-row ring brings it to 72 KB, 3 CTAs
//           (m7c, dk 64: 96 KB with 10 queries of 6 rows, 56 KB with 8 of 8,
//           4 CTAs). Measured (H200, BM_SelectBlocksFromLse, docs/performance.md):
//           paper_kernel 64k 31.9 -> 26.2 ms, 8k 0.70 -> 0.56; m7c 64k 6.3 ->
//           3.6 ms, 8k 0.123 -> 0.096.
//           (The column sums they replace summed the 64-row ring over the heads
//           in a separate pass, one thread per (query, key), behind a barrier.)
//           The tile's first block and block count are computed by each warp
//           once per tile for its finishing (and by warp 0 for the block table,
//           a tile ahead), dividing by d and l' through FastDiv (fast_div.h):
//           with `/` for those divisions and each tile's copy addresses built
//           from 64-bit row offsets, that bookkeeping was a third of the
//           kernel's instructions (ncu, paper_kernel 64k, 2026-11-30);
//           the queries' key and candidate counts and the tile's
//           blocks' lo_j / hi_j come from small shared tables (no integer
//           division per (query, block): ncu had the finishing threads'
//           divisions and the barrier behind their longest chains at a third
//           of the kernel, m7c at 64k). The host checks that no block overlaps
//           more than 64 compressed keys (hi_j - lo_j <= 64; 8 at l=32, d=16,
//           l'=64), so lo_j lies in this tile or the previous one, both still
//           in the ring.
//           Where a query's rows lie in one warp (hp = 8 or 16: m7c and
//           paper_kernel), that warp finishes the query's blocks from the ring
//           rows it wrote itself, after a __syncwarp; otherwise a barrier
//           publishes the ring and the CTA's threads share the (query, block)
//           pairs. (ncu, paper_kernel 64k, 4 warps: the CTA-wide finishing
//           kept half the threads idle, and its two barriers held a fifth of
//           the warps' time.)
// Pass 1 recomputes what the compressed forward already knows: given its
// logsumexp (select_blocks' cmp_lse, the layer passes it), base = lse and
// only pass 2 runs, one read of the compressed keys instead of two.
// 8 warps (128 rows) with half sums at dk >= 128 (launch_dk): every key tile
// copied and waited for serves twice the rows, at 2 CTAs (16 warps) an SM
// against 3 of 4 warps (12); the registers stay at 128 (the cap). Measured
// (H200, paper_kernel, from the logsumexp): 25.5 -> 18.5 ms at 64k, 0.567 ->
// 0.463 at 8k (docs/performance.md). At dk 64 (m7c) the scores' shared memory
// holds the SM to 16 warps either way, and 4 warps stay.
// Then one warp per query: forced blocks (0, t/l', t/l' - 1) -> +inf; with at
// most 32 candidate blocks each lane ranks its own against the others (taken
// iff fewer than n beat it), else n rounds of a warp argmax (higher score, ties
// -> lower index; a taken block becomes -inf, as in v1); the taken blocks are
// written in ascending order with a ballot, -1 padding last. Between the two,
// a threshold shortcut (top_n_by_threshold) takes the same set without the
// rounds when it can: the n rounds over 1024 candidates were a third of the
// kernel at m7c 64k (ncu). Rows are (query,
// head) pairs r = qi * hp + head, head < h; the others are zero padding (per
// head, h = 6: 60 of 64 rows used; half sums, h = 6: 48). h > 64 runs v1.
//
// Shared memory per CTA:
//   Kc stages  2 x 64 x (dk + 8) x 2 B    18 KB (dk 64), 34 KB (128), 50 KB (192)
//   P ring     rows x 136 x 4 B           rows = 8 (16 with 8 warps) with half sums (4.3 KB), 64
//                                          per head (34 KB); row stride 136: the
//                                          float2 stores of a half warp hit 32
//                                          banks; the top-n's candidate lists
//                                          after it
//   tables     per query: keys, candidates; per block of a tile: lo, hi,
//              two tiles' worth (filled a tile ahead)    1.5 KB (4 warps), 2 KB (8)
//   scores     q_tile x ceil(S/l') x 4 B  the rest of kSmemBudget (112 KB);
// the launcher lowers q_tile until the scores fit (m7c h=6 at 64k: 8 queries x
// 1024 blocks = 32 KB) and runs v1 when not even one query fits.
// The grid walks query tiles from the last (most keys) to the first so the long
// CTAs start early, across every (batch, group) (GridSlot, attention_common.cuh).
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/fast_div.h"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/packs.cuh"
#include "nsa/cuda/top_n.cuh"

namespace nsa::cuda {
namespace {

using tc::kLog2e;
using tc::kTcKeys;

// A CTA of WARPS warps (4, or 8 where the heads' half sums fill whole warps
// and dk >= 128: each compressed-key tile then serves 128 rows instead of 64,
// half the tile copies and barriers a row; launch_dk's rule).
template <int WARPS>
struct SelCta {
  static constexpr int kThreads = 32 * WARPS;
  static constexpr int kRows = 16 * WARPS;  // (query, head) rows
};
constexpr int kRing = 2 * kTcKeys;    // keys of P kept per row (this tile and the previous)
constexpr int kLdP = kRing + 8;       // floats per P row
constexpr int kMaxTileBlocks = 64;    // blocks finished by one key tile that the lo / hi table holds
// Key i's column in the ring (i >= 0; unsigned: a mask, not a signed remainder).
__device__ __forceinline__ int ring_col(int i) { return int(unsigned(i) % unsigned(kRing)); }

struct SelectTcParams {
  const void* q;
  const void* kc;
  const float* lse;  // the compressed forward's [B,S,H] logsumexp, or null: pass 1 computes it
  int* out;          // [B,S,G,n_sel]
  int B, S, S_cmp, H, G, h, n_blocks, n_sel;
  int hp;  // rows per query: h, or h rounded up to 8 with half sums (the extra rows are padding)
  int cmp_block, cmp_stride, sel_block;
  FastDiv by_stride, by_sel;  // d and l' as divisors: the tile loop divides by them
  int q_tile;
  float scale;
  bool heavy_first;  // the CTA start order (GridSlot; nsa_cuda.h, set_cta_order)
  bool half_sums;    // heads summed in registers per half warp (see the top)
};

// Rows of the P ring of a CTA of `rows` rows: one per half warp (8 heads of
// one query) with half sums, one per (query, head) row otherwise (see the top).
constexpr NSA_HD int ring_rows(bool half_sums, int rows) { return half_sums ? rows / 8 : rows; }

// The selection blocks that key tile [k0, k1 = k0 + 64) finishes (tile_blocks
// in the kernel): from jb = k0 d / l' on, at most J of them for any query of
// the CTA; jk1 = k1 d / l' bounds those of queries that see keys past k1.
struct TileBlocks {
  int jb, jk1, J;
};

// One step of the half sums' reduce-scatter (see the kernel): of v[0 .. 2 W),
// the lane keeps the upper W entries if its `bit` is set, else the lower, and
// adds the partner lane's copies of them; v[0 .. W) holds the result. W is a
// template argument so every index is a constant and v stays in registers.
template <int W>
__device__ __forceinline__ void reduce_scatter_step(float* v, int lane, int bit) {
  const bool upper = lane & bit;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const float give = upper ? v[k] : v[k + W], keep = upper ? v[k + W] : v[k];
    v[k] = keep + __shfl_xor_sync(0xffffffffu, give, bit);
  }
}

template <int DK, int WARPS>
struct SelLayout {
  static constexpr int kRows = SelCta<WARPS>::kRows;
  static constexpr int kLdK = DK + tc::kSmemPad;
  static constexpr size_t kKBytes = 2 * size_t(kTcKeys) * kLdK * 2;
  static constexpr size_t kTableBytes = (2 * size_t(kRows) + 4 * size_t(kMaxTileBlocks)) * sizeof(int);
  NSA_HD static size_t p_bytes(bool half_sums) { return size_t(ring_rows(half_sums, kRows)) * kLdP * sizeof(float); }
  NSA_HD static size_t fixed(bool half_sums) { return kKBytes + p_bytes(half_sums) + kTableBytes; }  // scores follow
  // The per-head ring (64 rows) with 4 warps; 8 warps only with half sums.
  static_assert(kKBytes + ring_rows(WARPS == 8, kRows) * kLdP * sizeof(float) + kTableBytes <
                    kSmemBudget,
                "select v2 tiles exceed the shared-memory budget");
};

// CTAs per SM that shared memory allows with half sums at 64k (4 warps: 3 at
// dk 192, 4 at 128; 8 warps: 2) or more (m7c at 8k: 5 at dk 64, 95 registers
// without the cap's help); registers are capped to match, so they never take
// a CTA away.
template <int DK, int WARPS>
constexpr int kSelectCtas = WARPS == 8 ? 2 : DK == 192 ? 3 : DK == 128 ? 4 : 5;

template <typename T, int DK, int WARPS>
__global__ void __launch_bounds__(SelCta<WARPS>::kThreads, (kSelectCtas<DK, WARPS>))
    nsa_select_blocks_tc_kernel(SelectTcParams p) {
  using L = SelLayout<DK, WARPS>;
  constexpr int kThreads = SelCta<WARPS>::kThreads, kRows = SelCta<WARPS>::kRows;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);                      // [2][64][kLdK]
  float* P = reinterpret_cast<float*>(smem_raw + L::kKBytes);  // [ring_rows][kLdP], key i at column i % 128
  int* q_nc = reinterpret_cast<int*>(smem_raw + L::kKBytes + L::p_bytes(p.half_sums));  // [kRows] visible keys of t0 + qi
  int* q_ncand = q_nc + kRows;                                            // [kRows] its candidate blocks
  int* blk_lo = q_ncand + kRows;             // [2][kMaxTileBlocks] lo_j of a tile's blocks jb + .., by tile parity
  int* blk_hi = blk_lo + 2 * kMaxTileBlocks;  // [2][kMaxTileBlocks] hi_j, before the query's clamp
  float* score = reinterpret_cast<float*>(smem_raw + L::fixed(p.half_sums));  // [q_tile][n_blocks]
  const T* q = static_cast<const T*>(p.q);
  const T* kc = static_cast<const T*>(p.kc);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  // The last query tile first: it sees the most compressed keys. Heavy first
  // (GridSlot) across every (batch, group); in blockIdx order (set_cta_order)
  // within each, the tiles of the last (batch, group) starting last.
  const GridSlot slot = GridSlot::of(p.heavy_first, /*last_tile_first=*/true);
  const int b = slot.y / p.G, g = slot.y % p.G;
  const int t0 = (p.heavy_first ? slot.tile : int(gridDim.x) - 1 - int(blockIdx.x)) * p.q_tile;
  const int nq = imin(p.q_tile, p.S - t0), rows = nq * p.hp;
  const auto n_cmp = [&](int t) { return imin(n_cmp_visible(t, p.cmp_block, p.by_stride), p.S_cmp); };
  const auto n_cand = [&](int t) { return imin(t / p.by_sel + 1, p.n_blocks); };

  // This lane's rows gid, gid + 8 of the warp: Q fragments and visible key counts.
  const int r0 = warp * 16 + gid, r1 = r0 + 8;
  const bool v0 = r0 < rows && r0 % p.hp < p.h, v1 = r1 < rows && r1 % p.hp < p.h;
  const int ta = t0 + (v0 ? r0 / p.hp : 0), tb = t0 + (v1 ? r1 / p.hp : 0);
  const int nc0 = v0 ? n_cmp(ta) : 0, nc1 = v1 ? n_cmp(tb) : 0;
  uint32_t qa[DK / 16][4];
  tc::load_a_frags<T, DK>(qa, q + row_offset(b, ta, g * p.h + (v0 ? r0 % p.hp : 0), p.S, p.H, DK), v0,
                          q + row_offset(b, tb, g * p.h + (v1 ? r1 % p.hp : 0), p.S, p.H, DK), v1, tig);
  // Keys this warp's rows see at most (its last valid row has the latest query).
  const int warp_nc = warp * 16 < rows ? n_cmp(t0 + imin(warp * 16 + 15, rows - 1) / p.hp) : 0;
  const int nc_max = n_cmp(t0 + nq - 1);
  const int n_tiles = ceil_div(nc_max, kTcKeys);
  const float scale_log2 = p.scale * kLog2e;

  for (int e = tid; e < nq * p.n_blocks; e += kThreads) score[e] = 0.f;
  if (tid < nq) q_nc[tid] = n_cmp(t0 + tid), q_ncand[tid] = n_cand(t0 + tid);  // read after a tile's barrier

  // This thread's part of key row r of each tile: key rows lie G dk apart from
  // the (batch, group)'s first, so a tile's copy costs one multiply-add of an
  // address, not a row offset's 64-bit products.
  constexpr int kParts = kThreads / kTcKeys;  // threads a key row
  const T* kc_bg = kc + row_offset(b, 0, g, p.S_cmp, p.G, DK);
  const auto issue_tile = [&](int i) {
    const int r = tid / kParts, key = i * kTcKeys + r;
    const bool valid = key < nc_max;
    T* dst = Ks + ((i & 1) * kTcKeys + r) * L::kLdK;
    tc::copy_row_async<DK, kParts>(dst, kc_bg + (valid ? int64_t(key) * (p.G * DK) : 0), valid, tid % kParts);
    tc::cp_async_commit();
  };
  // Finish the blocks j whose last visible overlapping key lies in [k0, k1):
  // for query t those are jb <= j < j_end(t) (hi_j = ceil((j+1) l'/d) is
  // increasing in j; hi_j > k0 <=> j >= k0 d / l', hi_j <= k1 <=> j < k1 d / l').
  // tile_blocks gives jb, jk1 = k1 d / l' and J, a bound on j_end - jb over the
  // CTA's queries: queries with n_cmp(t) <= k1 (t <= k1 d + l - 2) end at
  // n_cand(t), increasing in t; the others at most at jk1. Computed by each
  // warp once per tile for its finishing and by warp 0 for the block table,
  // its divisions through FastDiv.
  const int t_last = t0 + nq - 1;
  const auto tile_blocks = [&](int k0) {
    const int k1 = k0 + kTcKeys, jb = k0 * p.cmp_stride / p.by_sel, jk1 = k1 * p.cmp_stride / p.by_sel;
    const int tk = imin(t_last, k1 * p.cmp_stride + p.cmp_block - 2);
    return TileBlocks{jb, jk1, imax(imin(jk1, n_cand(t_last)), tk >= t0 ? n_cand(tk) : 0) - jb};
  };
  // A tile's lo_j / hi_j, one thread per block, into table buffer `buf` (the
  // tile's parity): filled one tile ahead, so the tile's first barrier
  // publishes it and no division sits on the finishing's path.
  // Warp 0 alone: the other warps skip the tile's bounds (fewer registers live
  // across the tile, where the 8-warp kernel is at its cap).
  const auto fill_block_table = [&](int k0, int buf) {
    if (warp != 0) return;
    const TileBlocks blocks = tile_blocks(k0);
    for (int jj = lane; jj < imin(blocks.J, kMaxTileBlocks); jj += 32) {
      blk_lo[buf * kMaxTileBlocks + jj] = overlap_lo(blocks.jb + jj, p.cmp_block, p.cmp_stride, p.sel_block);
      blk_hi[buf * kMaxTileBlocks + jj] = overlap_hi(blocks.jb + jj, p.cmp_stride, p.sel_block);
    }
  };
  // Query qi's score of the tile's block jb + jj (a no-op where that block
  // does not end in this tile for qi).
  const auto finish_block = [&](int qi, int jj, int k0, const TileBlocks& blocks, int buf) {
    const int k1 = k0 + kTcKeys, j = blocks.jb + jj, nc = q_nc[qi], nca = q_ncand[qi];
    if (nc <= k0 || j >= (nc <= k1 ? nca : imin(blocks.jk1, nca))) return;
    const bool tabled = blocks.J <= kMaxTileBlocks;
    const int lo = tabled ? blk_lo[buf * kMaxTileBlocks + jj] : overlap_lo(j, p.cmp_block, p.cmp_stride, p.sel_block);
    const int hi = imin(tabled ? blk_hi[buf * kMaxTileBlocks + jj] : overlap_hi(j, p.cmp_stride, p.sel_block), nc);
    if (lo >= hi) return;  // nothing visible overlaps: stays 0, as in v1
    float s = 0.f;
    if (p.half_sums) {
      // The query's halves (8 rows each: heads in order, then padding) hold its
      // keys' sums up to this tile; at hp = 16 the first holds both (summed in
      // the tile, below).
      const float* prow = P + qi * (p.hp / 8) * kLdP;
      if (p.hp <= 16) {
        // One ring row: four keys' loads ahead of their sums (still added in
        // ascending order), not each load behind the previous add.
        int i = lo;
        for (; i + 4 <= hi; i += 4) {
          const float a0 = prow[ring_col(i)], a1 = prow[ring_col(i + 1)], a2 = prow[ring_col(i + 2)],
                      a3 = prow[ring_col(i + 3)];
          s += a0, s += a1, s += a2, s += a3;
        }
        for (; i < hi; ++i) s += prow[ring_col(i)];
      } else {
        const int halves = p.hp / 8;
        for (int i = lo; i < hi; ++i) {
          float col = 0.f;
          for (int hh = 0; hh < halves; ++hh) col += prow[hh * kLdP + ring_col(i)];
          s += col;
        }
      }
    } else {
      const float* prow = P + qi * p.hp * kLdP;
      int head = 0;
      for (; head + 4 <= p.h; head += 4) {  // four independent chains; each as below
        const float* r = prow + head * kLdP;
        float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
        for (int i = lo; i < hi; ++i) {
          const int c = ring_col(i);
          a0 += r[c], a1 += r[kLdP + c], a2 += r[2 * kLdP + c], a3 += r[3 * kLdP + c];
        }
        s += a0, s += a1, s += a2, s += a3;
      }
      for (; head < p.h; ++head) {
        float acc = 0.f;
        for (int i = lo; i < hi; ++i) acc += prow[head * kLdP + ring_col(i)];
        s += acc;
      }
    }
    score[qi * p.n_blocks + j] = s;
  };
  // Every (query, block) pair of the tile, spread over the CTA's threads
  // (after a barrier: a query's P rows may come from several warps).
  const auto finish_blocks_cta = [&](int k0, const TileBlocks& blocks, int buf) {
    const int J = blocks.J;
    if (J <= 0) return;
    const float inv_J = 1.f / float(J);
    for (int e = tid; e < nq * J; e += kThreads) {
      int qi = int(float(e) * inv_J);  // e / J without the division; exact after the two fixes
      qi += (qi + 1) * J <= e;
      qi -= qi * J > e;
      finish_block(qi, e - qi * J, k0, blocks, buf);
    }
  };
  // Where a query's hp rows (8 or 16) lie in one warp, the warp finishes its
  // own one or two queries from the ring rows it wrote itself: no barrier, and
  // every warp takes an equal share (ncu, paper_kernel 64k: the CTA-wide
  // finishing left half the threads idle, and the two barriers around it held
  // a fifth of the warps' time).
  const bool warp_owned = p.half_sums && 16 % p.hp == 0;
  // (hp is 8 or 16 here: the warp's first query and count without a division,
  // which the compiler had recomputed every tile.)
  const auto finish_blocks_warp = [&](int k0, const TileBlocks& blocks, int buf) {
    const bool one = p.hp == 16;
    const int J = blocks.J, qa = one ? warp : 2 * warp, nqw = imin(one ? 1 : 2, nq - qa);
    for (int e = lane; e < nqw * J; e += 32) {
      const int k = e >= J;  // nqw <= 2
      finish_block(qa + k, e - k * J, k0, blocks, buf);
    }
  };

  // The exponent base per row: p = 2^(s scale log2e - base) is the softmax
  // probability when base = the row's logsumexp in the log2 domain (given, or
  // m + log2 l after pass 1). Padding rows get +inf: p = 0 for any key, so a
  // warp whose real rows all see a tile needs no per-element mask.
  float base[2] = {INFINITY, INFINITY}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const bool va[2] = {v0, v1};
  if (p.lse) {  // pass 1 is done
    const int ra[2] = {r0, r1};
    const int tr[2] = {ta, tb};
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (va[r]) base[r] = p.lse[(int64_t(b) * p.S + tr[r]) * p.H + g * p.h + ra[r] % p.hp] * kLog2e;
  }
  // Keys every real row of the warp sees (its first row has its earliest query).
  const int warp_nc_lo = warp * 16 < rows ? n_cmp(t0 + warp * 16 / p.hp) : 0;
  for (int pass = p.lse ? 1 : 0; pass < 2; ++pass) {
    if (n_tiles > 0) issue_tile(0);
    if (pass == 1) fill_block_table(0, 0);
    for (int i = 0; i < n_tiles; ++i) {
      // One barrier a tile: tile i is in shared memory (and its block table);
      // every warp is done with tile i - 1, whose stage the copy of tile i + 1
      // reuses and whose ring columns, table and scores this tile overwrites.
      tc::cp_async_wait<0>();
      __syncthreads();
      if (i + 1 < n_tiles) {
        issue_tile(i + 1);
        if (pass == 1) fill_block_table((i + 1) * kTcKeys, (i + 1) & 1);
      }
      const int k0 = i * kTcKeys;
      if (k0 < warp_nc) {
        float s[kTcKeys / 8][4];
        tc::warp_a_bt<T, DK, kTcKeys, L::kLdK>(s, qa, Ks + (i & 1) * kTcKeys * L::kLdK, 0, lane);
        // Masked keys (past a row's n_cmp) only in a tile some real row of the warp does not see whole.
        const bool whole = k0 + kTcKeys <= warp_nc_lo;
        const auto visible = [&](int n, int c) { return whole || k0 + n * 8 + 2 * tig + (c & 1) < (c < 2 ? nc0 : nc1); };
        if (pass == 0) {  // online max / sum; l stays a per-lane partial until the end
#pragma unroll
          for (int n = 0; n < kTcKeys / 8; ++n)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[n][c] = visible(n, c) ? s[n][c] * scale_log2 : -INFINITY;
          float mx[2] = {m[0], m[1]};
#pragma unroll
          for (int n = 0; n < kTcKeys / 8; ++n) {
            mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
          }
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mb = mx[r] == -INFINITY ? 0.f : mx[r];  // nothing seen yet: no -inf - -inf
            float sum = 0.f;
#pragma unroll
            for (int n = 0; n < kTcKeys / 8; ++n)
              sum += tc::exp2_ftz(s[n][2 * r] - mb) + tc::exp2_ftz(s[n][2 * r + 1] - mb);
            l[r] = l[r] * tc::exp2_ftz(m[r] - mb) + sum;
            m[r] = mx[r];
          }
        } else {
          // p = 2^(s scale log2e - base): one FFMA and one MUFU a score (0 where
          // masked; the mask's compares only in tiles that need them).
          if (whole) {
#pragma unroll
            for (int n = 0; n < kTcKeys / 8; ++n)
#pragma unroll
              for (int c = 0; c < 4; ++c) s[n][c] = tc::exp2_ftz(fmaf(s[n][c], scale_log2, -base[c / 2]));
          } else {
#pragma unroll
            for (int n = 0; n < kTcKeys / 8; ++n)
#pragma unroll
              for (int c = 0; c < 4; ++c)
                s[n][c] = visible(n, c) ? tc::exp2_ftz(fmaf(s[n][c], scale_log2, -base[c / 2])) : 0.f;
          }
          if (p.half_sums && p.hp == 16) {
            // One query's 16 rows (heads gid and gid + 8 of this lane): their
            // pair summed in the lane first, then one reduce-scatter (below)
            // over the 8 pairs, into the query's first ring row. Every key by
            // a tree of the same shape, as with two halves.
            float v[2 * (kTcKeys / 8)];
#pragma unroll
            for (int n = 0; n < kTcKeys / 8; ++n)
#pragma unroll
              for (int c = 0; c < 2; ++c) v[2 * n + c] = s[n][c] + s[n][2 + c];
            reduce_scatter_step<8>(v, lane, 16);
            reduce_scatter_step<4>(v, lane, 8);
            reduce_scatter_step<2>(v, lane, 4);
            *reinterpret_cast<float2*>(P + warp * 2 * kLdP + ring_col(k0 + gid * 8 + 2 * tig)) =
                make_float2(v[0], v[1]);
          } else if (p.half_sums) {  // p summed over each half warp's 8 rows, into its ring row
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              float v[2 * (kTcKeys / 8)];  // v[2 n + c]: key k0 + 8 n + 2 tig + c of row gid + 8 r
#pragma unroll
              for (int n = 0; n < kTcKeys / 8; ++n)
#pragma unroll
                for (int c = 0; c < 2; ++c) v[2 * n + c] = s[n][2 * r + c];
              // Reduce-scatter over the gid lanes (lane bits 4, 3, 2): each step
              // keeps half the entries, adds the partner's copy of them, so the
              // lane ends with entries 2 gid, 2 gid + 1 (n = gid) summed over the
              // 8 rows, every key by a tree of the same shape.
              reduce_scatter_step<8>(v, lane, 16);
              reduce_scatter_step<4>(v, lane, 8);
              reduce_scatter_step<2>(v, lane, 4);
              *reinterpret_cast<float2*>(P + (warp * 2 + r) * kLdP + ring_col(k0 + gid * 8 + 2 * tig)) =
                  make_float2(v[0], v[1]);
            }
          } else {  // p into the ring, one row per (query, head); masked keys get 0 (never read)
#pragma unroll
            for (int n = 0; n < kTcKeys / 8; ++n) {
              const int col = ring_col(k0 + n * 8 + 2 * tig);
#pragma unroll
              for (int r = 0; r < 2; ++r)
                *reinterpret_cast<float2*>(P + (warp * 16 + gid + 8 * r) * kLdP + col) =
                    make_float2(s[n][2 * r], s[n][2 * r + 1]);
            }
          }
        }
      }
      if (pass == 1) {
        const TileBlocks blocks = tile_blocks(k0);
        if (warp_owned) {
          __syncwarp();  // the warp's ring rows of tile i are written
          finish_blocks_warp(k0, blocks, i & 1);
        } else {
          __syncthreads();  // P of tile i is complete
          finish_blocks_cta(k0, blocks, i & 1);
        }
      }
    }
    if (pass == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        // Padding stays at +inf; a query before its first compressed key has every p masked anyway.
        base[r] = va[r] && l[r] > 0.f ? m[r] + log2f(l[r]) : INFINITY;
      }
    }
    __syncthreads();  // the stages, the ring and the scores are free / complete (also when there was no tile)
  }

  // Top-n, one warp per query.
  for (int qi = warp; qi < nq; qi += WARPS) {
    const int t = t0 + qi, nca = n_cand(t), local = t / p.sel_block;
    float* sc = score + qi * p.n_blocks;
    if (lane == 0) {  // forced blocks outrank every scored one
      sc[0] = INFINITY;
      if (local < nca) sc[local] = INFINITY;
      if (local - 1 >= 0 && local - 1 < nca) sc[local - 1] = INFINITY;
    }
    __syncwarp();
    const int picks = imin(p.n_sel, nca);
    int* out = p.out + ((int64_t(b) * p.S + t) * p.G + g) * p.n_sel;
    if (nca <= 32) {
      top_n_one_per_lane(sc, nca, picks, p.n_sel, out, lane);
      continue;
    }
    // The P ring is free now: each warp's candidate lists (32 scores, 32 indices).
    if (top_n_by_threshold(sc, nca, picks, p.n_sel, out, P + warp * 64, reinterpret_cast<int*>(P + warp * 64 + 32),
                           lane))
      continue;
    for (int round = 0; round < picks; ++round) {
      float bs = -INFINITY;
      int bi = -1;
      for (int j = lane; j < nca; j += 32)
        if (sc[j] != -INFINITY && beats(sc[j], j, bs, bi)) bs = sc[j], bi = j;
      for (int off = 16; off > 0; off >>= 1) {
        const float os = __shfl_xor_sync(0xffffffffu, bs, off);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, off);
        if (beats(os, oi, bs, bi)) bs = os, bi = oi;
      }
      if (lane == 0 && bi >= 0) sc[bi] = -INFINITY;  // taken
      __syncwarp();
    }
    // Taken blocks (-inf) in ascending order, then -1.
    int count = 0;
    for (int j0 = 0; j0 < nca && count < picks; j0 += 32) {
      const int j = j0 + lane;
      const bool taken = j < nca && sc[j] == -INFINITY;
      const unsigned mask = __ballot_sync(0xffffffffu, taken);
      const int pos = count + __popc(mask & ((1u << lane) - 1u));
      if (taken && pos < p.n_sel) out[pos] = j;
      count += __popc(mask);
    }
    for (int s = imin(count, p.n_sel) + lane; s < p.n_sel; s += 32) out[s] = -1;
  }
}

std::atomic<int> g_select_warps{0};       // set_select_blocks_warps: 0 = the rule below
std::atomic<int> g_last_select_warps{0};  // last_select_blocks_warps

template <typename T, int DK, int WARPS>
bool launch_warps(SelectTcParams& p) {
  using L = SelLayout<DK, WARPS>;
  const size_t per_query = size_t(p.n_blocks) * sizeof(float), fixed = L::fixed(p.half_sums);
  const int fit = int((kSmemBudget - fixed) / per_query);
  p.q_tile = imin(L::kRows / p.hp, fit);
  if (p.q_tile < 1) return false;  // very long S: v1
  const size_t smem = fixed + size_t(p.q_tile) * per_query;
  auto kernel = nsa_select_blocks_tc_kernel<T, DK, WARPS>;
  NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const dim3 grid(ceil_div(p.S, p.q_tile), p.B * p.G);
  kernel<<<grid, SelCta<WARPS>::kThreads, smem, at::cuda::getCurrentCUDAStream()>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  g_last_select_warps.store(WARPS);
  return true;
}

// 8 warps (128 rows a CTA) with half sums at dk >= 128, where a key tile's
// copy and products are large enough for the shared tile to pay (paper_kernel:
// select_blocks at 64k, H200, docs/performance.md); 4 otherwise (the per-head
// ring has 64 rows; at dk 64, m7c, the scores' shared memory already holds the
// SM to 16 warps either way). set_select_blocks_warps overrides where 8 exist.
template <typename T, int DK>
bool launch_dk(SelectTcParams& p) {
  if constexpr (DK >= 128) {
    const int forced = g_select_warps.load();
    if (p.half_sums && (forced == 8 || forced == 0)) return launch_warps<T, DK, 8>(p);
  }
  return launch_warps<T, DK, 4>(p);
}

template <typename T>
bool launch_dtype(SelectTcParams& p, int dk) {
  switch (dk) {
    case 64: return launch_dk<T, 64>(p);
    case 128: return launch_dk<T, 128>(p);
    case 192: return launch_dk<T, 192>(p);
    default: return false;
  }
}


}  // namespace

void set_select_blocks_warps(int warps) {
  TORCH_CHECK(warps == 0 || warps == 4 || warps == 8, "set_select_blocks_warps: 0, 4 or 8, got ", warps);
  g_select_warps.store(warps);
}
int select_blocks_warps() { return g_select_warps.load(); }
int last_select_blocks_warps() { return g_last_select_warps.load(); }

// Called by select_blocks (select_blocks.cu) after its argument checks; false:
// this shape / dtype is not tiled here, the caller runs v1.
bool launch_select_blocks_tc(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& cmp_lse,
                             at::Tensor& out, int cmp_block, int cmp_stride, int sel_block, int n_sel,
                             float scale) {
  const at::ScalarType dtype = q.scalar_type();
  if (dtype != at::kHalf && dtype != at::kBFloat16) return false;
  SelectTcParams p{};
  p.q = q.data_ptr();
  p.kc = kc.data_ptr();
  p.lse = cmp_lse.defined() ? cmp_lse.data_ptr<float>() : nullptr;
  p.out = out.data_ptr<int>();
  p.B = int(q.size(0));
  p.S = int(q.size(1));
  p.S_cmp = int(kc.size(1));
  p.H = int(q.size(2));
  p.G = int(kc.size(2));
  p.h = p.H / p.G;
  p.n_blocks = ceil_div(p.S, sel_block);
  p.n_sel = n_sel;
  p.cmp_block = cmp_block;
  p.cmp_stride = cmp_stride;
  p.sel_block = sel_block;
  p.by_stride = FastDiv(cmp_stride);
  p.by_sel = FastDiv(sel_block);
  p.scale = scale;
  p.heavy_first = cta_order() == CtaOrder::HeavyFirst;
  // Half sums where the heads fill whole half warps, or nearly: h rounded up
  // to 8 wastes at most a quarter of the rows (m7c_125m, h = 6: 8 queries of
  // 8 rows a CTA instead of 10 of 6, for a ring of 8 rows instead of 64).
  const int h8 = ceil_div(p.h, 8) * 8;
  p.half_sums = 4 * (h8 - p.h) <= h8;
  p.hp = p.half_sums ? h8 : p.h;
  if (p.h > SelCta<4>::kRows) return false;  // the group's heads must fit one CTA
  // 16-byte rows for cp.async (dk is a multiple of 64), 4-byte pairs for Q.
  if (!aligned16(p.q) || (p.S_cmp > 0 && !aligned16(p.kc))) return false;
  // Every block's overlapping compressed keys must fit the 128-key ring (see top).
  for (int j = 0; j < p.n_blocks; ++j)
    if (overlap_hi(j, cmp_stride, sel_block) - overlap_lo(j, cmp_block, cmp_stride, sel_block) > kTcKeys)
      return false;
  const int dk = int(q.size(3));
  if (dtype == at::kBFloat16) return launch_dtype<c10::BFloat16>(p, dk);
  return launch_dtype<c10::Half>(p, dk);
}

}  // namespace nsa::cuda
