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

// Shared memory of a query-tiled kernel: two K/V stages (KvStages), then, for
// Selected, a reduction area of `MergeBytes` aliasing them once the key loop is
// over, and the segment list (2 n_sel + 1 ints) after the larger of the two.
template <int DK, int DV, size_t MergeBytes>
struct QueryTiledLayout {
  static constexpr int kLdK = KvStages<DK, DV>::kLdK, kLdV = KvStages<DK, DV>::kLdV;
  static constexpr size_t kKvBytes = KvStages<DK, DV>::kBytes;
  static constexpr size_t kMergeBytes = MergeBytes;
  static constexpr size_t kSelSegOffset = kKvBytes > kMergeBytes ? kKvBytes : kMergeBytes;
  static size_t selected_bytes(int n_sel) { return kSelSegOffset + size_t(2 * n_sel + 1) * sizeof(int); }
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

// Selected: the CTA's rows are heads chunk * head_chunk + r (r < 16) of one
// query; every warp holds the same 16 rows, this lane rows gid and gid + 8.
struct SelectedHeadRows {
  bool valid[2];  // a real head (not padding)
  int hq[2];      // global head (clamped for padding rows)
  __device__ __forceinline__ SelectedHeadRows(const AttnParams& p, const TcThread& c) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = c.gid + 8 * i, head = c.chunk * p.head_chunk + r;
      valid[i] = r < p.head_chunk && head < p.h;
      hq[i] = c.g * p.h + imin(head, p.h - 1);
    }
  }
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

// Selected, one query t: its chosen blocks concatenated into one virtual key
// list, so a 64-key tile is always full whatever sel_block is. Slot s covers
// keys [lo[s], lo[s] + len) at virtual positions [start[s], start[s + 1])
// (empty for -1 slots). Lives in shared memory at `seg` (2 n_sel + 1 ints).
struct SelectedSegments {
  int* start;  // [n_sel + 1]
  int* lo;     // [n_sel]
  int n_keys;  // start[n_sel]
  __device__ __forceinline__ SelectedSegments(const AttnParams& p, int* seg, int b, int g, int t, int tid) {
    start = seg, lo = seg + p.n_sel + 1;
    const int* idx = p.block_idx + (int64_t(b) * p.S + t) * p.G * p.n_sel + int64_t(g) * p.n_sel;
    for (int s = tid; s < p.n_sel; s += kTcThreads) {
      int k_lo, k_hi;
      selected_key_range(idx[s], t, p.Sk, p.sel_block, &k_lo, &k_hi);
      lo[s] = k_lo;
      start[s + 1] = k_hi - k_lo;  // length for now
    }
    __syncthreads();
    if (tid == 0) {
      start[0] = 0;
      for (int s = 0; s < p.n_sel; ++s) start[s + 1] += start[s];
    }
    __syncthreads();
    n_keys = start[p.n_sel];
  }
};

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

// Tile i of a selected query's virtual key list. A thread's virtual position
// only grows from tile to tile, so its segment cursor only moves forward.
struct SegmentCursor {
  int slot = 0;
  template <typename T, int DK, int DV, int LDK, int LDV>
  __device__ __forceinline__ void issue(T* Ks, T* Vs, const AttnParams& p, const SelectedSegments& seg, int i, int b,
                                        int g, int tid) {
    const int pos = i * kTcKeys + tid / 2;
    while (slot < p.n_sel && pos >= seg.start[slot + 1]) ++slot;
    const bool valid = pos < seg.n_keys;
    const int key = valid ? seg.lo[slot] + (pos - seg.start[slot]) : 0;
    issue_kv_row<T, DK, DV, LDK, LDV>(Ks, Vs, p, i & 1, b, g, key, valid, tid);
  }
};

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

// Window / Compressed: is (row query t, key) visible in a tile whose keys end
// at `hi`? `all`: the warp sees the whole tile (tile_coverage), no test needed.
template <Branch BR>
__device__ __forceinline__ bool row_sees(const AttnParams& p, bool all, int hi, int t, int key) {
  return all || (t >= 0 && key < hi && key_visible(BR, t, key, p.window, p.cmp_block, p.cmp_stride));
}

// Window / Compressed: the walk over the CTA's contiguous key range in
// double-buffered tiles. For each tile the warp sees (part of),
// `tile(ks, vs, kt, hi, all)` gets the tile's K and V stages, its first key kt,
// the range's end hi and whether the warp sees all of it (else: row_sees).
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
      tile(Ks + (i & 1) * kTcKeys * Layout::kLdK, Vs + (i & 1) * kTcKeys * Layout::kLdV, kt, hi, all);
  };
  kv_pipeline(ceil_div(hi - lo, kTcKeys), issue, compute);
}

// Selected: the walk over the query's virtual key list in double-buffered
// tiles; warp w takes the 16-key slice at virtual position pos0 = 64 i + 16 w
// of tile i, and `tile(ks, vs, pos0)` runs for each slice that holds a key
// (positions >= seg.n_keys are past the end: the kernel masks them). Every
// selected key is visible to the query (<= t), so there is nothing else to mask.
template <typename T, int DK, int DV, typename Layout, typename Tile>
__device__ __forceinline__ void walk_selected_keys(const AttnParams& p, unsigned char* smem, const TcThread& cta,
                                                   const SelectedSegments& seg, Tile&& tile) {
  T* Ks = reinterpret_cast<T*>(smem);
  T* Vs = Ks + 2 * kTcKeys * Layout::kLdK;
  SegmentCursor cursor;
  const auto issue = [&](int i) {
    cursor.issue<T, DK, DV, Layout::kLdK, Layout::kLdV>(Ks, Vs, p, seg, i, cta.b, cta.g, cta.tid);
  };
  const auto compute = [&](int i) {
    const int pos0 = i * kTcKeys + cta.warp * 16;
    if (pos0 < seg.n_keys) tile(Ks + (i & 1) * kTcKeys * Layout::kLdK, Vs + (i & 1) * kTcKeys * Layout::kLdV, pos0);
  };
  kv_pipeline(ceil_div(seg.n_keys, kTcKeys), issue, compute);
}

}  // namespace nsa::cuda::tc
