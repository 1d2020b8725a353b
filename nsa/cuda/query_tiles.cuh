// What the query-tiled v2 kernels (forward: attention_fwd_tc.cu, dq:
// attention_bwd_tc.cu) share: where a CTA sits in the grid, which (query, head)
// rows a warp owns, which K/V tiles a warp sees, the selected branch's virtual
// key list, and the double-buffered cp.async pipeline over K/V tiles. One copy
// so that a forward and its gradient can never disagree about which keys a row
// attends to; the arithmetic of each kernel stays in its own file.
#pragma once

#include <climits>
#include <type_traits>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/wgmma.cuh"

namespace nsa::cuda::tc {

// Selected's shared memory after the two K/V stages: the union of the chosen
// blocks of a CTA's queries, built in passes over at most CH selection blocks
// (any sequence length fits; CH = 1024 where shared memory allows).
template <int CH>
struct SelectedUnionSmem {
  static constexpr int kChunk = CH;
  static_assert(CH % 32 == 0 && CH / 32 <= 32, "one warp lane per word of `present`");
  // Pass over blocks c0 .. c0 + CH - 1: chooser[i] has bit qi set when query
  // t0 + qi chose block c0 + i (and the block holds a key <= t0 + qi);
  // present[w] bit b says chooser[32 w + b] != 0.
  unsigned long long chooser[CH];
  unsigned present[CH / 32];
  int block[CH];  // the pass's chosen blocks, ascending
  int n_blocks;
  // Per K/V stage and tile row: the key and its chooser mask (0: past the end).
  int tile_key[2][kTcKeys];
  unsigned long long tile_mask[2][kTcKeys];
};

// Shared memory of a query-tiled kernel: two K/V stages; Selected adds its
// union (SelectedUnionSmem) after them, with the largest pass (1024, 512 or
// 256 blocks) that keeps the CTA within kSmemBudget. CORE = false: the v2
// stages, rows of dk (dv) elements padded by 16 bytes for ldmatrix (KvStages);
// CORE = true: the wgmma stages (wgmma.cuh), 8 x 8 core matrices without
// padding, which the warpgroup reads through descriptors.
template <int DK, int DV, bool CORE = false>
struct QueryTiledLayout {
  static constexpr bool kCore = CORE;
  static constexpr int kLdK = KvStages<DK, DV>::kLdK, kLdV = KvStages<DK, DV>::kLdV;  // v2's padded rows
  // Elements per K / V stage.
  static constexpr int kKStage = kTcKeys * (CORE ? DK : kLdK), kVStage = kTcKeys * (CORE ? DV : kLdV);
  static constexpr size_t kKvBytes = 2 * size_t(kKStage + kVStage) * 2;
  static_assert(kKvBytes <= kSmemBudget, "K/V stages exceed the shared-memory budget");
  // Element offset in a K / V stage of the 16-byte piece (row r, chunk c of 8 elements).
  __device__ static __forceinline__ int k_piece(int r, int c) {
    return CORE ? wg::core_offset<DK>(r, c) : r * kLdK + c * 8;
  }
  __device__ static __forceinline__ int v_piece(int r, int c) {
    return CORE ? wg::core_offset<DV>(r, c) : r * kLdV + c * 8;
  }
  using SelectedUnion = std::conditional_t<
      kKvBytes + sizeof(SelectedUnionSmem<1024>) <= kSmemBudget, SelectedUnionSmem<1024>,
      std::conditional_t<kKvBytes + sizeof(SelectedUnionSmem<512>) <= kSmemBudget, SelectedUnionSmem<512>,
                         SelectedUnionSmem<256>>>;
  static constexpr size_t kSelectedBytes = kKvBytes + sizeof(SelectedUnion);
};

// This thread's place in the mma fragments (lane = 4 gid + tig, mma_tile.cuh)
// and its CTA (QueryCta, attention_common.cuh).
struct TcThread : QueryCta {
  int tid, lane, warp, gid, tig;
  __device__ __forceinline__ explicit TcThread(const AttnParams& p) : QueryCta(p) {
    tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  }
};

// A warp owns rows base .. base + 15 of the CTA (QueryCta::row): base = 16 warp,
// or 0 for every warp when Selected splits keys (p.sel_split_keys); this lane
// holds rows base + gid and base + gid + 8.
struct WarpQueryRows {
  int t[2], hq[2];  // query (-1: padding row) and global head of rows gid, gid + 8
  int tmin, tmax;   // queries among the warp's valid rows (consecutive); tmax < 0: none
  __device__ __forceinline__ WarpQueryRows(const AttnParams& p, const TcThread& c, int base) {
    const int r0 = base + c.gid;
    t[0] = c.row(p, r0, &hq[0]);
    t[1] = c.row(p, r0 + 8, &hq[1]);
    tmin = INT_MAX, tmax = -1;
    for (int r = base; r < base + 16; ++r) {
      int unused;
      const int tr = c.row(p, r, &unused);
      if (tr >= 0) tmin = imin(tmin, tr), tmax = imax(tmax, tr);
    }
  }
  __device__ __forceinline__ bool warp_active() const { return tmax >= 0; }
};

// Selected's SplitKeys tiling (launch.cuh): all 4 warps hold rows 0..15.
template <Branch BR>
__device__ __forceinline__ bool splits_keys(const AttnParams& p) {
  return BR == Branch::Selected && p.sel_split_keys;
}
// The rows this warp owns under its branch's tiling.
template <Branch BR>
__device__ __forceinline__ WarpQueryRows warp_rows(const AttnParams& p, const TcThread& c) {
  return WarpQueryRows(p, c, splits_keys<BR>(p) ? 0 : c.warp * 16);
}

// SplitKeys' merge: this warp's partial accumulators of its 16 rows (C layout,
// N columns) into rows 16 warp .. + 15 of a [4][16][LD] float area, where the
// merging threads read every warp's copy of a row.
template <int N, int LD>
__device__ __forceinline__ void stash_warp_rows(float* area, const float (&acc)[N / 8][4], const TcThread& c) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float* row = area + (c.warp * 16 + c.gid + 8 * i) * LD;
#pragma unroll
    for (int n = 0; n < N / 8; ++n) {
      row[n * 8 + 2 * c.tig] = acc[n][2 * i];
      row[n * 8 + 2 * c.tig + 1] = acc[n][2 * i + 1];
    }
  }
}

// SplitKeys' merge, after the stash and a barrier: `pair(r, c, t, hq)` for each
// real row r (query t, global head hq) of the 16 and column pair c, c + 1 of N,
// spread over the CTA's threads.
template <int N, typename Pair>
__device__ __forceinline__ void for_each_merged_pair(const AttnParams& p, const TcThread& c, Pair&& pair) {
  for (int e = c.tid; e < 16 * N / 2; e += kTcThreads) {
    const int r = e / (N / 2), col = 2 * (e % (N / 2));
    int hq;
    const int t = c.row(p, r, &hq);
    if (t >= 0) pair(r, col, t, hq);
  }
}

// Does a warp whose rows' queries span [tmin, tmax] see none / all of the keys
// [kt, kend) of a tile (warp-uniform)? `all` needs a full tile: a partial one is
// masked per element against its end.
template <Branch BR>
__device__ __forceinline__ void tile_coverage(const AttnParams& p, int kt, int kend, int tmin, int tmax, bool* none,
                                              bool* all) {
  if (BR == Branch::Window) {
    *none = kt > tmax || kend - 1 <= tmin - p.window;
    *all = kend == kt + kTcKeys && kend - 1 <= tmin && kt > tmax - p.window;
  } else {
    *none = kt >= n_cmp_visible(tmax, p.cmp_block, p.cmp_stride);
    *all = kend == kt + kTcKeys && kend <= n_cmp_visible(tmin, p.cmp_block, p.cmp_stride);
  }
}

// One stage's K and V rows 16 warp .. 16 warp + 15 <- rows of KV group g, each
// warp copying the 16 rows whose keys its own lanes found: row r is key row
// *key of key_of(r, &key), zeros where it returns false (nothing is read then,
// but *key must still be a real row). Piece e = lane + 32 j of the warp's rows
// is row e / (D / 8), chunk e % (D / 8): at D = 64 one instruction copies 4
// whole rows, 4 global lines, each shared bank group of the padded layout 4
// times. (Two threads per row taking alternate pieces touched 16 lines per
// instruction: 22 shared wavefronts against 4 ideal, ncu, selected forward.)
template <int D, typename T, typename Piece, typename KeyOf>
__device__ __forceinline__ void copy_warp_rows(T* stage, const T* src, const AttnParams& p, const TcThread& cta,
                                               Piece&& piece, KeyOf&& key_of) {
  constexpr int P = D / 8;  // 16-byte pieces per row
#pragma unroll
  for (int e = cta.lane; e < 16 * P; e += 32) {
    const int r = 16 * cta.warp + e / P, c = e % P;
    int key;
    const bool valid = key_of(r, &key);
    cp_async_16(stage + piece(r, c), src + row_offset(cta.b, key, cta.g, p.Sk, p.G, D) + c * 8, valid);
  }
}
template <typename T, int DK, int DV, typename Layout, typename KeyOf>
__device__ __forceinline__ void issue_kv_rows(T* Ks, T* Vs, const AttnParams& p, int stage, const TcThread& cta,
                                              KeyOf&& key_of) {
  copy_warp_rows<DK>(Ks + stage * Layout::kKStage, static_cast<const T*>(p.k), p, cta,
                     [](int r, int c) { return Layout::k_piece(r, c); }, key_of);
  copy_warp_rows<DV>(Vs + stage * Layout::kVStage, static_cast<const T*>(p.v), p, cta,
                     [](int r, int c) { return Layout::v_piece(r, c); }, key_of);
  cp_async_commit();
}
static_assert(kTcKeys == 16 * kTcWarps, "each warp copies 16 rows of a stage");

// copy_warp_rows for rows that are consecutive keys (issue_union_tile's
// ONE_BLOCK): row r at src0 + r stride, zeros from row `rows` on. The same
// pieces on the same lanes, but one pointer a lane stepped by a constant,
// where copy_warp_rows forms each piece's 64-bit offset from its key (ncu,
// QueryColumns forward at m7c 8k: the copy 31.8 % of the instructions, 147 a
// warp a tile, 57 of them IMAD).
template <int D, typename T, typename Piece>
__device__ __forceinline__ void copy_warp_rows_from(T* stage, Piece&& piece, const T* src0, int64_t stride,
                                                    int rows, const TcThread& cta) {
  constexpr int P = D / 8, kStep = 32 / P;  // rows one warp instruction copies
  static_assert(32 % P == 0, "a lane keeps its piece of every row it copies");
  const int c = cta.lane % P, r0 = 16 * cta.warp + cta.lane / P;
  const T* src = src0 + r0 * stride + c * 8;
#pragma unroll
  for (int k = 0; k < 16 / kStep; ++k) {
    const int r = r0 + k * kStep;
    cp_async_16(stage + piece(r, c), r < rows ? src + k * kStep * stride : src0, r < rows);
  }
}
// issue_kv_rows for a stage of consecutive keys key0 .. key0 + rows - 1
// (zeros past them), through copy_warp_rows_from.
template <typename T, int DK, int DV, typename Layout>
__device__ __forceinline__ void issue_kv_rows_from(T* Ks, T* Vs, const AttnParams& p, int stage, const TcThread& cta,
                                                   int key0, int rows) {
  copy_warp_rows_from<DK>(Ks + stage * Layout::kKStage, [](int r, int c) { return Layout::k_piece(r, c); },
                          static_cast<const T*>(p.k) + row_offset(cta.b, key0, cta.g, p.Sk, p.G, DK),
                          int64_t(p.G) * DK, rows, cta);
  copy_warp_rows_from<DV>(Vs + stage * Layout::kVStage, [](int r, int c) { return Layout::v_piece(r, c); },
                          static_cast<const T*>(p.v) + row_offset(cta.b, key0, cta.g, p.Sk, p.G, DV),
                          int64_t(p.G) * DV, rows, cta);
  cp_async_commit();
}

// The double-buffered walk over n_tiles K/V tiles: tile i + 1 loads (cp.async)
// while tile i computes. `issue(i)` starts tile i's copies into stage i & 1;
// `compute(i)` runs with tile i in shared memory for every warp. The barrier
// after compute(i) keeps stage i & 1 from being refilled while a warp reads it.
// ASYNC_PROXY: wgmma reads the stages (wgmma.cuh), so each thread fences its
// landed copies for the async proxy before the barrier that publishes them.
// The fence waits for every copy of the thread in flight, so there tile i + 1
// is issued after it (still before compute(i), which it overlaps): fenced
// behind it, the next tile's copies would serialize with this one's (ncu:
// the fence was the selected forward's costliest stall).
template <bool ASYNC_PROXY = false, typename Issue, typename Compute>
__device__ __forceinline__ void kv_pipeline(int n_tiles, Issue&& issue, Compute&& compute) {
  if (n_tiles > 0) issue(0);
  for (int i = 0; i < n_tiles; ++i) {
    if constexpr (ASYNC_PROXY) {
      cp_async_wait<0>();
      wg::fence_proxy_async();
      __syncthreads();
      if (i + 1 < n_tiles) issue(i + 1);  // its stage was last read in iteration i - 1, before the barrier
    } else {
      if (i + 1 < n_tiles) {
        issue(i + 1);  // its stage was last read in iteration i - 1, before the barrier
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
    }
    compute(i);
    __syncthreads();
  }
}

// The columns [lo, hi] of a tile that one query sees, where they form one
// interval (Selected with whole blocks of a multiple of the tile, below).
struct ColSpan {
  int lo, hi;  // empty when hi < lo
  __device__ __forceinline__ bool has(int col) const { return col >= lo && col <= hi; }
};

// What a tile's callback may ask: which (row query t, tile column) pairs are
// visible, and how many columns hold a key (the rest are past the end).
// Window / Compressed: columns are keys kt + col of a contiguous range ending at
// hi; `all`: the warp sees the whole tile (tile_coverage), no test needed.
template <Branch BR>
struct ContiguousTile {
  static constexpr int kCols = kTcKeys;
  const AttnParams& p;
  int kt, hi;
  bool all;
  __device__ __forceinline__ int n_cols() const { return imin(hi - kt, kTcKeys); }
  __device__ __forceinline__ bool sees(int t, int col) const {
    const int key = kt + col;
    return all || (t >= 0 && key < hi && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride));
  }
  static constexpr bool kSpans = false;
};

// Selected: column col is key[col], chosen by the queries t0 + qi whose bit qi
// is set in mask[col]; the query must also reach it (key <= t, a block can be
// partly in a later query's past only). NK columns: the whole 64-key tile, or
// a warp's 16-key slice of it when the warps split keys. `all`: every query of
// the warp chose every column and reaches it (as ContiguousTile's `all`, no
// per-element test needed; padding rows compute but are never written).
// `one_block`: the columns are consecutive keys of one block (key[c] = key[0] +
// c, one chooser mask), which holds whenever sel_block is a multiple of the
// tile (the union lists whole blocks, only the last may be cut): a row then
// sees columns 0 .. t - key[0] if its query chose the block, else none.
template <int NK>
struct SelectedTile {
  static constexpr int kCols = NK;
  const int* key;
  const unsigned long long* mask;
  int t0, cols;
  bool all, one_block;
  __device__ __forceinline__ int n_cols() const { return cols; }
  __device__ __forceinline__ bool sees(int t, int col) const {
    return all || (t >= 0 && key[col] <= t && ((mask[col] >> (t - t0)) & 1ull));
  }
  static constexpr bool kSpans = true;
  __device__ __forceinline__ ColSpan span(int t) const {
    if (t < 0 || !((mask[0] >> (t - t0)) & 1ull)) return {0, -1};
    return {0, imin(t - key[0], cols - 1)};
  }
};

// body(visible) with the cheapest test of which (row i of the lane's two,
// tile column col) pairs the warp's rows see: visible(i, col). A Selected tile
// inside one block tests each score against its row's span, two integer
// compares, instead of loading the column's key and 64-bit chooser mask and
// shifting it per (row, column): that per-element test made the ALU the
// selected forward's busiest pipe (its forward 1.35x faster, dq 1.16x, at the
// m7c training shape). Window and Compressed keep key_visible per element: the
// span form measured 3-5 % slower there (more registers spilled).
template <typename View, typename Body>
__device__ __forceinline__ void with_visibility(const View& view, int tr0, int tr1, Body&& body) {
  if constexpr (View::kSpans) {
    if (view.one_block) {
      const ColSpan span[2] = {view.span(tr0), view.span(tr1)};
      body([&](int i, int col) { return span[i].has(col); });
      return;
    }
  }
  body([&](int i, int col) { return view.sees(i == 0 ? tr0 : tr1, col); });
}

// Window / Compressed: the walk over the CTA's contiguous key range in
// double-buffered tiles. For each tile the warp sees (part of),
// `tile(ks, vs, view)` gets the tile's K and V stages and a ContiguousTile.
template <typename T, int DK, int DV, Branch BR, typename Layout, typename Tile>
__device__ __forceinline__ void walk_contiguous_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                                     const WarpQueryRows& rows, Tile&& tile) {
  T* Ks = reinterpret_cast<T*>(smem);  // [2][kKStage]
  T* Vs = Ks + 2 * Layout::kKStage;    // [2][kVStage]
  int lo, hi;
  contiguous_key_range(BR, cta.t0, cta.t_last, p.Sk, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
  const auto issue = [&](int i) {
    issue_kv_rows<T, DK, DV, Layout>(Ks, Vs, p, i & 1, cta, [&](int r, int* key) {
      const int kr = lo + i * kTcKeys + r;
      *key = kr < hi ? kr : lo;
      return kr < hi;
    });
  };
  const auto compute = [&](int i) {
    const int kt = lo + i * kTcKeys, kend = imin(kt + kTcKeys, hi);
    bool none, all;
    tile_coverage<BR>(p, kt, kend, rows.tmin, rows.tmax, &none, &all);
    // The warpgroup's MMAs need all 4 warps: a warp that sees none of the tile
    // masks it whole instead of skipping it.
    if (Layout::kCore || (rows.warp_active() && !none))
      tile(Ks + (i & 1) * Layout::kKStage, Vs + (i & 1) * Layout::kVStage, ContiguousTile<BR>{p, kt, hi, all});
  };
  kv_pipeline<Layout::kCore>(ceil_div(hi - lo, kTcKeys), issue, compute);
}

// Selected, one pass over the selection blocks [c0, c0 + n): which of the CTA's
// queries chose each (bit qi for query t0 + qi; q_tile <= 64, one bit each), then
// the chosen blocks listed in ascending order. Returns the pass's key count.
// Every thread calls it; it ends on a barrier. The listing costs one warp scan
// over the words of `present`, not a walk over every block, so a CTA of one
// query whose 16 blocks spread over 1024 pays little. A block is listed once
// however many queries chose it: that is the point (its K/V tile is loaded once
// for all of them), and why block_idx rows must hold no duplicates (nsa_cuda.h).
template <typename Union>
__device__ __forceinline__ int build_selected_union(const AttnParams& p, const TcThread& cta, Union& u, int c0,
                                                    int n) {
  for (int i = cta.tid; i < n; i += kTcThreads) u.chooser[i] = 0ull;
  for (int i = cta.tid; i < Union::kChunk / 32; i += kTcThreads) u.present[i] = 0u;
  __syncthreads();
  const int n_q = cta.t_last - cta.t0 + 1;
  const int64_t row_stride = int64_t(p.G) * p.n_sel;  // one query to the next
  const int* idx = p.block_idx + (int64_t(cta.b) * p.S + cta.t0) * row_stride + int64_t(cta.g) * p.n_sel;
  for (int e = cta.tid; e < n_q * p.n_sel; e += kTcThreads) {
    const int qi = e / p.n_sel, j = idx[qi * row_stride + e % p.n_sel];
    int lo, hi;
    selected_key_range(j, cta.t0 + qi, p.Sk, p.sel_block, &lo, &hi);
    if (lo < hi && j >= c0 && j < c0 + n) {
      const int i = j - c0;
      atomicOr(&u.chooser[i], 1ull << qi);
      atomicOr(&u.present[i / 32], 1u << (i % 32));
    }
  }
  __syncthreads();
  if (cta.warp == 0) {
    // Lane w lists the blocks of word w in ascending order after those of
    // words < w (exclusive scan of the words' counts).
    const unsigned word = cta.lane < Union::kChunk / 32 ? u.present[cta.lane] : 0u;
    const int count = __popc(word);
    int incl = count;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (cta.lane >= d) incl += v;
    }
    int slot = incl - count;
    for (unsigned rest = word; rest != 0u; rest &= rest - 1u) u.block[slot++] = c0 + 32 * cta.lane + __ffs(rest) - 1;
    if (cta.lane == 31) u.n_blocks = incl;
  }
  __syncthreads();
  // Every listed block but the last is whole (sel_block keys): only the block
  // holding t_last, or the sequence's end, is cut, and it is the highest.
  const int nb = u.n_blocks;
  if (nb == 0) return 0;
  int lo, hi;
  selected_key_range(u.block[nb - 1], cta.t_last, p.Sk, p.sel_block, &lo, &hi);
  return (nb - 1) * p.sel_block + (hi - lo);
}

// Selected: tile i of the pass's virtual key list (the union's blocks
// [c0, ..) concatenated) into stage i & 1: each tile row's key and chooser mask
// (u.tile_key / tile_mask; INT_MAX and 0 past the n_keys keys), then its K and
// V rows by cp.async (zeros past the end), committed as one group.
// ONE_BLOCK: the caller's sel_block is a multiple of the tile (QueryColumns'
// precondition), so a tile lies in one block and its keys are consecutive: the
// copy takes them from the tile's first key, where it asked each piece's key
// from tile_key (ncu, QueryColumns forward at m7c 8k: the copy was 37 % of the
// kernel's instructions, and its key reads the commonest stall: a cp.async is
// a memory clobber, so every piece of K and again of V read its row's key
// anew), and the block comes from the host-built divisor, where a run-time
// division by sel_block was another 5.6 %. The row-tiled kernels keep the
// per-row keys (there a tile may span blocks; taking the same path as
// ONE_BLOCK where it applies cost them registers: ptxas, up to 48 more bytes
// of spill). ONE_BLOCK keeps no tile_key / tile_mask: the tile's first key
// and its block's choosers stand for every row, and whoever needs them
// computes them from the union (one_block_tile); it copies through
// issue_kv_rows_from.
// ONE_BLOCK's tile i of the pass from c0 (pos0 = 64 i < n_keys: the tile
// exists): its first key and its block's chooser mask, from the union, which
// stays as it is through the pass. Every thread computes them, so no thread
// waits for another to record them, and a stage's tile key is never rewritten
// while a warp may read it (the tensor-copy walk of selected_columns.cu has
// no barrier between tiles).
struct OneBlockTile {
  int key0;
  unsigned long long choosers;
};
template <typename Union>
__device__ __forceinline__ OneBlockTile one_block_tile(const AttnParams& p, const Union& u, int c0, int i) {
  const int pos0 = i * kTcKeys, nb0 = pos0 / p.by_sel_block;
  const int j = u.block[nb0];
  return {j * p.sel_block + (pos0 - nb0 * p.sel_block), u.chooser[j - c0]};
}
template <typename T, int DK, int DV, typename Layout, bool ONE_BLOCK = false, typename Union>
__device__ __forceinline__ void issue_union_tile(const AttnParams& p, const TcThread& cta, Union& u, T* Ks, T* Vs,
                                                 int c0, int n_keys, int i) {
  if constexpr (ONE_BLOCK) {
    const int key0 = one_block_tile(p, u, c0, i).key0;
    issue_kv_rows_from<T, DK, DV, Layout>(Ks, Vs, p, i & 1, cta, key0, n_keys - i * kTcKeys);
  } else {
    const int r = cta.tid / 2, pos = i * kTcKeys + r;
    const bool valid = pos < n_keys;
    const int j = valid ? u.block[pos / p.sel_block] : 0;
    const int key = valid ? j * p.sel_block + pos % p.sel_block : 0;
    if ((cta.tid & 1) == 0) {
      u.tile_key[i & 1][r] = valid ? key : INT_MAX;
      u.tile_mask[i & 1][r] = valid ? u.chooser[j - c0] : 0ull;
    }
    __syncwarp();  // the warp copies the rows its lanes just keyed (rows 16 warp ..)
    issue_kv_rows<T, DK, DV, Layout>(Ks, Vs, p, i & 1, cta, [&](int rr, int* kr) {
      const int kk = u.tile_key[i & 1][rr];
      *kr = kk == INT_MAX ? 0 : kk;
      return kk != INT_MAX;
    });
  }
}

// Selected: the walk over the CTA's union of chosen blocks, concatenated into
// one virtual key list (so a 64-key tile is full whatever sel_block is), in
// passes of Union::kChunk blocks. Each K/V tile is loaded once for all the CTA's
// queries; a warp skips a tile (or its 16-key slice, when the warps split keys)
// none of its queries chose, and `tile(ks, vs, view)` masks per (query, key)
// through a SelectedTile. Keys come in ascending order, as in the reference.
template <typename T, int DK, int DV, typename Layout, typename Tile>
__device__ __forceinline__ void walk_selected_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                                   const WarpQueryRows& rows, Tile&& tile) {
  using Union = typename Layout::SelectedUnion;
  T* Ks = reinterpret_cast<T*>(smem);
  T* Vs = Ks + 2 * Layout::kKStage;
  Union& u = *reinterpret_cast<Union*>(smem + Layout::kKvBytes);
  // Bits of the queries among this warp's rows (consecutive: tmin..tmax).
  unsigned long long warp_bits = 0ull;
  if (rows.warp_active()) {
    const int lo = rows.tmin - cta.t0, n = rows.tmax - rows.tmin + 1;
    warp_bits = (n >= 64 ? ~0ull : ((1ull << n) - 1ull)) << lo;
  }
  const int n_blocks = imin(ceil_div(cta.t_last + 1, p.sel_block), ceil_div(p.Sk, p.sel_block));
  // Whole blocks of a multiple of kTcKeys keys: every tile lies in one block.
  const bool one_block = p.sel_block % kTcKeys == 0;
  for (int c0 = 0; c0 < n_blocks; c0 += Union::kChunk) {
    const int n_keys = build_selected_union(p, cta, u, c0, imin(Union::kChunk, n_blocks - c0));
    const auto issue = [&](int i) { issue_union_tile<T, DK, DV, Layout>(p, cta, u, Ks, Vs, c0, n_keys, i); };
    const auto compute = [&](int i) {
      // Split keys: warp w takes columns 16 w .. 16 w + 15; else all 64.
      const int col0 = p.sel_split_keys ? cta.warp * 16 : 0;
      const unsigned long long* mask = u.tile_mask[i & 1] + col0;
      // This lane's columns: lane (and lane + 32) of the tile, or lane of the
      // warp's 16-key slice (lanes 16..31 then stand in with "all chose it").
      const unsigned long long m0 = p.sel_split_keys ? (cta.lane < 16 ? mask[cta.lane] : ~0ull) : mask[cta.lane];
      const unsigned long long m1 = p.sel_split_keys ? ~0ull : mask[cta.lane + 32];
      unsigned long long seen = p.sel_split_keys ? (cta.lane < 16 ? m0 : 0ull) : m0 | m1;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) seen |= __shfl_xor_sync(0xffffffffu, seen, off);
      // None of the warp's queries chose these keys: skip them, unless the
      // warpgroup's MMAs need this warp (it then masks the tile whole).
      if (!Layout::kCore && !(seen & warp_bits)) return;
      // (The core-matrix stages serve SharedRows only: col0 = 0 there.)
      const T* ks = Ks + (i & 1) * Layout::kKStage + Layout::k_piece(col0, 0);
      const T* vs = Vs + (i & 1) * Layout::kVStage + Layout::v_piece(col0, 0);
      const int cols = n_keys - i * kTcKeys - col0;
      const int nk = p.sel_split_keys ? 16 : kTcKeys;
      // Every column chosen by every query of the warp (a column past the end
      // has mask 0), and the last, highest key within reach of its first query.
      const bool all = __all_sync(0xffffffffu, (m0 & m1 & warp_bits) == warp_bits) &&
                       u.tile_key[i & 1][col0 + nk - 1] <= rows.tmin;
      const SelectedTile<kTcKeys> whole{u.tile_key[i & 1], mask, cta.t0, imin(cols, kTcKeys), all, one_block};
      if constexpr (Layout::kCore) {
        tile(ks, vs, whole);  // SharedRows only (the launcher's choice)
      } else if (p.sel_split_keys) {
        tile(ks, vs, SelectedTile<16>{u.tile_key[i & 1] + col0, mask, cta.t0, imin(cols, 16), all, one_block});
      } else {
        tile(ks, vs, whole);
      }
    };
    kv_pipeline<Layout::kCore>(ceil_div(n_keys, kTcKeys), issue, compute);
  }
}

// The key walk of a branch: its tiles reach `tile(ks, vs, view)` with a view
// (ContiguousTile / SelectedTile) that answers which (query, column) pairs are
// visible.
template <typename T, int DK, int DV, Branch BR, typename Layout, typename Tile>
__device__ __forceinline__ void walk_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                          const WarpQueryRows& rows, Tile&& tile) {
  if constexpr (BR == Branch::Selected) {
    walk_selected_keys<T, DK, DV, Layout>(p, smem, cta, rows, tile);
  } else {
    walk_contiguous_keys<T, DK, DV, BR, Layout>(p, smem, cta, rows, tile);
  }
}

}  // namespace nsa::cuda::tc
