// What the query-tiled v2 kernels (forward: attention_fwd_tc.cu, dq:
// attention_bwd_tc.cu) share: where a CTA sits in the grid, which (query, head)
// rows a warp owns, which K/V tiles a warp sees, the selected branch's virtual
// key list, and the double-buffered cp.async pipeline over K/V tiles. One copy
// so that a forward and its gradient can never disagree about which keys a row
// attends to; the arithmetic of each kernel stays in its own file.
#pragma once

#include <climits>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/mma_tile.cuh"

namespace nsa::cuda::tc {

// Selected: the union of the chosen blocks of a CTA's queries is built in
// passes over at most kSelChunk selection blocks (any sequence length fits).
constexpr int kSelChunk = 256;

// Shared memory of Selected's key walk, after the two K/V stages.
struct SelectedUnionSmem {
  // Pass: block c0 + i -> bit qi set when query t0 + qi chose it (and it holds a
  // key <= t0 + qi).
  unsigned long long chooser[kSelChunk];
  unsigned long long mask[kSelChunk];  // compacted: the chosen blocks' choosers, ascending
  int block[kSelChunk];                // compacted: the chosen blocks, ascending
  int start[kSelChunk + 1];  // compacted: virtual key position of each block's first key
  int n_blocks;              // compacted count
  // Per K/V stage and tile row: the key and its chooser mask (0: past the end).
  int tile_key[2][kTcKeys];
  unsigned long long tile_mask[2][kTcKeys];
};

// Shared memory of a query-tiled kernel: two K/V stages (KvStages); Selected
// adds its union (SelectedUnionSmem) after them.
template <int DK, int DV>
struct QueryTiledLayout {
  static constexpr int kLdK = KvStages<DK, DV>::kLdK, kLdV = KvStages<DK, DV>::kLdV;
  static constexpr size_t kKvBytes = KvStages<DK, DV>::kBytes;
  static constexpr size_t kSelectedBytes = kKvBytes + sizeof(SelectedUnionSmem);
};

// This thread's place in the mma fragments (lane = 4 gid + tig, mma_tile.cuh)
// and its CTA (QueryCta, attention_common.cuh).
struct TcThread : QueryCta {
  int tid, lane, warp, gid, tig;
  __device__ __forceinline__ explicit TcThread(const AttnParams& p) : QueryCta(p) {
    tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  }
};

// Window / Compressed: a warp owns rows 16 warp .. + 15 of the CTA
// (QueryCta::row); this lane holds rows gid and gid + 8 of them.
struct WarpQueryRows {
  int t[2], hq[2];  // query (-1: padding row) and global head of rows gid, gid + 8
  int tmin, tmax;   // queries among the warp's valid rows (consecutive); tmax < 0: none
  __device__ __forceinline__ WarpQueryRows(const AttnParams& p, const TcThread& c) {
    const int r0 = c.warp * 16 + c.gid;
    t[0] = c.row(p, r0, &hq[0]);
    t[1] = c.row(p, r0 + 8, &hq[1]);
    tmin = INT_MAX, tmax = -1;
    for (int r = c.warp * 16; r < c.warp * 16 + 16; ++r) {
      int unused;
      const int tr = c.row(p, r, &unused);
      if (tr >= 0) tmin = imin(tmin, tr), tmax = imax(tmax, tr);
    }
  }
  __device__ __forceinline__ bool warp_active() const { return tmax >= 0; }
};

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

// Tile row tid / 2 of stage `stage` <- K and V rows `key` of KV group g (zeros
// when !valid; nothing is read then, but `key` must still be a real row). Two
// threads per row (kTcThreads == 2 kTcKeys), each copying half of it.
template <typename T, int DK, int DV, int LDK, int LDV>
__device__ __forceinline__ void issue_kv_row(T* Ks, T* Vs, const AttnParams& p, int stage, int b, int g, int key,
                                             bool valid, int tid) {
  const int r = tid / 2;
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  copy_row_async<DK>(Ks + (stage * kTcKeys + r) * LDK, k + row_offset(b, key, g, p.Sk, p.G, DK), valid, tid & 1);
  copy_row_async<DV>(Vs + (stage * kTcKeys + r) * LDV, v + row_offset(b, key, g, p.Sk, p.G, DV), valid, tid & 1);
  cp_async_commit();
}

// Tile i of a contiguous key range [lo, hi).
template <typename T, int DK, int DV, int LDK, int LDV>
__device__ __forceinline__ void issue_contiguous_tile(T* Ks, T* Vs, const AttnParams& p, int i, int lo, int hi, int b,
                                                      int g, int tid) {
  const int key = lo + i * kTcKeys + tid / 2;
  const bool valid = key < hi;
  issue_kv_row<T, DK, DV, LDK, LDV>(Ks, Vs, p, i & 1, b, g, valid ? key : lo, valid, tid);
}

// The double-buffered walk over n_tiles K/V tiles: tile i + 1 loads (cp.async)
// while tile i computes. `issue(i)` starts tile i's copies into stage i & 1;
// `compute(i)` runs with tile i in shared memory for every warp. The barrier
// after compute(i) keeps stage i & 1 from being refilled while a warp reads it.
template <typename Issue, typename Compute>
__device__ __forceinline__ void kv_pipeline(int n_tiles, Issue&& issue, Compute&& compute) {
  if (n_tiles > 0) issue(0);
  for (int i = 0; i < n_tiles; ++i) {
    if (i + 1 < n_tiles) {
      issue(i + 1);  // its stage was last read in iteration i - 1, before the barrier
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    compute(i);
    __syncthreads();
  }
}

// What a tile's callback may ask: which (row query t, tile column) pairs are
// visible, and how many columns hold a key (the rest are past the end).
// Window / Compressed: columns are keys kt + col of a contiguous range ending at
// hi; `all`: the warp sees the whole tile (tile_coverage), no test needed.
template <Branch BR>
struct ContiguousTile {
  const AttnParams& p;
  int kt, hi;
  bool all;
  __device__ __forceinline__ int n_cols() const { return imin(hi - kt, kTcKeys); }
  __device__ __forceinline__ bool sees(int t, int col) const {
    const int key = kt + col;
    return all || (t >= 0 && key < hi && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride));
  }
};

// Selected: column col is key[col], chosen by the queries t0 + qi whose bit qi
// is set in mask[col]; the query must also reach it (key <= t, a block can be
// partly in a later query's past only).
struct SelectedTile {
  const int* key;
  const unsigned long long* mask;
  int t0, cols;
  __device__ __forceinline__ int n_cols() const { return cols; }
  __device__ __forceinline__ bool sees(int t, int col) const {
    return t >= 0 && key[col] <= t && ((mask[col] >> (t - t0)) & 1ull);
  }
};

// Window / Compressed: the walk over the CTA's contiguous key range in
// double-buffered tiles. For each tile the warp sees (part of),
// `tile(ks, vs, view)` gets the tile's K and V stages and a ContiguousTile.
template <typename T, int DK, int DV, Branch BR, typename Layout, typename Tile>
__device__ __forceinline__ void walk_contiguous_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                                     const WarpQueryRows& rows, Tile&& tile) {
  T* Ks = reinterpret_cast<T*>(smem);       // [2][kTcKeys][kLdK]
  T* Vs = Ks + 2 * kTcKeys * Layout::kLdK;  // [2][kTcKeys][kLdV]
  int lo, hi;
  contiguous_key_range(BR, cta.t0, cta.t_last, p.Sk, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
  const auto issue = [&](int i) {
    issue_contiguous_tile<T, DK, DV, Layout::kLdK, Layout::kLdV>(Ks, Vs, p, i, lo, hi, cta.b, cta.g, cta.tid);
  };
  const auto compute = [&](int i) {
    const int kt = lo + i * kTcKeys, kend = imin(kt + kTcKeys, hi);
    bool none, all;
    tile_coverage<BR>(p, kt, kend, rows.tmin, rows.tmax, &none, &all);
    if (rows.warp_active() && !none)
      tile(Ks + (i & 1) * kTcKeys * Layout::kLdK, Vs + (i & 1) * kTcKeys * Layout::kLdV,
           ContiguousTile<BR>{p, kt, hi, all});
  };
  kv_pipeline(ceil_div(hi - lo, kTcKeys), issue, compute);
}

// Selected, one pass over the selection blocks [c0, c0 + n): which of the CTA's
// queries chose each (bit qi for query t0 + qi; q_tile <= 64, one bit each), then
// the chosen blocks compacted in ascending order with the virtual position of
// their first key. Returns the pass's key count. Every thread calls it; it ends
// on a barrier. A block is listed once however many queries chose it: that is
// the point (its K/V tile is loaded once for all of them), and why block_idx
// rows must hold no duplicates (nsa_cuda.h).
__device__ __forceinline__ int build_selected_union(const AttnParams& p, const TcThread& cta, SelectedUnionSmem& u,
                                                    int c0, int n) {
  for (int i = cta.tid; i < n; i += kTcThreads) u.chooser[i] = 0ull;
  __syncthreads();
  const int n_q = cta.t_last - cta.t0 + 1;
  const int64_t row_stride = int64_t(p.G) * p.n_sel;  // one query to the next
  const int* idx = p.block_idx + (int64_t(cta.b) * p.S + cta.t0) * row_stride + int64_t(cta.g) * p.n_sel;
  for (int e = cta.tid; e < n_q * p.n_sel; e += kTcThreads) {
    const int qi = e / p.n_sel, j = idx[qi * row_stride + e % p.n_sel];
    int lo, hi;
    selected_key_range(j, cta.t0 + qi, p.Sk, p.sel_block, &lo, &hi);
    if (lo < hi && j >= c0 && j < c0 + n) atomicOr(&u.chooser[j - c0], 1ull << qi);
  }
  __syncthreads();
  if (cta.warp == 0) {
    // One warp compacts 32 blocks per step: a ballot of the chosen ones gives
    // each its slot, an inclusive scan of their key counts its start.
    int n_out = 0, n_keys = 0;
    for (int base = 0; base < n; base += 32) {
      const int i = base + cta.lane, j = c0 + i;
      const unsigned long long m = i < n ? u.chooser[i] : 0ull;
      const unsigned chosen = __ballot_sync(0xffffffffu, m != 0ull);
      int lo = 0, hi = 0;
      if (m != 0ull) selected_key_range(j, cta.t_last, p.Sk, p.sel_block, &lo, &hi);
      const int len = hi - lo;
      int incl = len;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, d);
        if (cta.lane >= d) incl += v;
      }
      if (m != 0ull) {
        const int slot = n_out + __popc(chosen & ((1u << cta.lane) - 1u));
        u.mask[slot] = m;
        u.block[slot] = j;
        u.start[slot] = n_keys + incl - len;
      }
      n_out += __popc(chosen);
      n_keys += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (cta.lane == 0) u.start[n_out] = n_keys, u.n_blocks = n_out;
  }
  __syncthreads();
  return u.start[u.n_blocks];
}

// Selected: the walk over the CTA's union of chosen blocks, concatenated into
// one virtual key list (so a 64-key tile is full whatever sel_block is), in
// passes of kSelChunk blocks. Each K/V tile is loaded once for all the CTA's
// queries; a warp skips a tile none of its queries chose, and `tile(ks, vs,
// view)` masks per (query, key) through a SelectedTile. Keys come in ascending
// order, as in the reference.
template <typename T, int DK, int DV, typename Layout, typename Tile>
__device__ __forceinline__ void walk_selected_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                                   const WarpQueryRows& rows, Tile&& tile) {
  T* Ks = reinterpret_cast<T*>(smem);
  T* Vs = Ks + 2 * kTcKeys * Layout::kLdK;
  SelectedUnionSmem& u = *reinterpret_cast<SelectedUnionSmem*>(smem + Layout::kKvBytes);
  // Bits of the queries among this warp's rows (consecutive: tmin..tmax).
  unsigned long long warp_bits = 0ull;
  if (rows.warp_active()) {
    const int lo = rows.tmin - cta.t0, n = rows.tmax - rows.tmin + 1;
    warp_bits = (n >= 64 ? ~0ull : ((1ull << n) - 1ull)) << lo;
  }
  const int n_blocks = imin(ceil_div(cta.t_last + 1, p.sel_block), ceil_div(p.Sk, p.sel_block));
  for (int c0 = 0; c0 < n_blocks; c0 += kSelChunk) {
    const int n_keys = build_selected_union(p, cta, u, c0, imin(kSelChunk, n_blocks - c0));
    int slot = 0;  // a thread's virtual position only grows from tile to tile
    const auto issue = [&](int i) {
      const int r = cta.tid / 2, pos = i * kTcKeys + r;
      while (slot < u.n_blocks && pos >= u.start[slot + 1]) ++slot;
      const bool valid = pos < n_keys;
      const int key = valid ? u.block[slot] * p.sel_block + (pos - u.start[slot]) : 0;
      if ((cta.tid & 1) == 0) {
        u.tile_key[i & 1][r] = valid ? key : INT_MAX;
        u.tile_mask[i & 1][r] = valid ? u.mask[slot] : 0ull;
      }
      issue_kv_row<T, DK, DV, Layout::kLdK, Layout::kLdV>(Ks, Vs, p, i & 1, cta.b, cta.g, key, valid, cta.tid);
    };
    const auto compute = [&](int i) {
      const unsigned long long* mask = u.tile_mask[i & 1];
      unsigned long long seen = mask[cta.lane] | mask[cta.lane + 32];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) seen |= __shfl_xor_sync(0xffffffffu, seen, off);
      if (seen & warp_bits)
        tile(Ks + (i & 1) * kTcKeys * Layout::kLdK, Vs + (i & 1) * kTcKeys * Layout::kLdV,
             SelectedTile{u.tile_key[i & 1], mask, cta.t0, imin(kTcKeys, n_keys - i * kTcKeys)});
    };
    kv_pipeline(ceil_div(n_keys, kTcKeys), issue, compute);
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
