// Selected forward and dq v2, QueryColumns tiling: each query's heads are the
// N columns of the MMAs, so a query that did not choose a block skips it whole.
//
// Why. The SharedRows / SplitKeys tilings (attention_fwd_tc.cu) put (query,
// head) rows in the M dimension: a warp's 16 MMA rows span 16 / h queries (h
// = 6 for m7c_125m: 2.7 queries), so a warp computes a tile when any of them
// chose its block, and the rest of the rows are masked. With choices that
// differ from query to query (an untrained model, or a long sequence), a CTA's
// 10 queries' union is nearly every visible block and about half of the scores
// it computes are masked (docs/performance.md, the selected forward at 2k).
// Here the products are transposed, FlashAttention-style but column-major:
//   S^T = K Q^T      M = 16 keys per m-tile (A: K rows by ldmatrix),
//                    N = 8 = the query's h <= 8 heads (B: Q^T by ldmatrix
//                    from the query's rows in shared memory),
//   online softmax   per column (head) over the keys: the max over the
//                    gid lanes (3 shuffles) and the m-tiles,
//   O^T += V^T P^T   M = 16 dv per m-tile (A: V^T by ldmatrix.trans),
//                    K = 16 keys (B: P^T, the S^T accumulators rounded and
//                    transposed in registers by movmatrix),
// so the MMAs a query makes are its own: 2 x 4 x (dk + dv) / 16 per chosen
// 64-key tile, with h of 8 columns used (6 / 8 for m7c).
//
// The CTA: 4 warps x kQw queries (16 at 64/64) of one (b, g), t0 + warp + 4 j
// for warp's j-th query. It walks the union of its queries' chosen blocks
// exactly as SharedRows does (query_tiles.cuh: build_selected_union, the
// double-buffered K/V stages, issue_union_tile); with sel_block a multiple of
// 64 every tile lies in one block, so one chooser mask says which queries use
// it, and a tile's causal mask is one key bound per query. Keys come in
// ascending order; sums run in a fixed order, so results are bitwise
// reproducible run to run (they are not bitwise those of the other tilings:
// another order of the same sums). Registers at 64/64: O^T 64 floats, S^T 16,
// the running max and sum 16 (167-168 of the 168 that 3 CTAs per SM leave, no
// spill); Q waits in shared memory (ColumnsShape), where in registers it
// spilled.
//
// Measured (H200, BM_Selected{Fwd,Bwd}Tiling, docs/performance.md): m7c at
// 8k the forward 0.451 ms against SharedRows' 0.572 and the backward (dq
// kernel + dk/dv) 0.954 against 1.05; at 64k 5.26 against 6.97 and 9.36
// against 11.8. At the m7c training shape (S = 2048, batch 8) they lose,
// 0.438 against 0.411 and 1.08 against 0.972: there a query sees at most 32
// blocks and chooses 16 of them, every one until t = 1024, so SharedRows'
// rows are mostly used and its K/V fragments serve 16 rows per load where a
// column serves one query. (Sharing each K and V fragment among 2 or 4 of a
// warp's queries, to load less, measured slower still: 0.489 / 0.640 ms
// against 0.433 at 2k, with spills.) So the automatic choice takes them from
// 4 n candidate blocks on (selected_query_columns, launch.cuh), where they
// apply: h <= 8, sel_block a multiple of 64, dk and dv in {64, 128}.
//
// The dq kernel walks the same union with the same columns (a query's dq
// never depends on another's; the row-tiled dq kernel, attention_bwd_tc.cu,
// has the forward's masked rows too):
//   S^T = K Q^T, dP^T = V dO^T     M = keys, N = heads (Q, dO rows in shared
//                                  memory, as B by ldmatrix)
//   P^T = 2^(S^T scale log2 e - lse log2 e), 0 past the query; dS^T = P^T
//   (dP^T - delta), per column (lse, delta of the lane's two heads in registers)
//   dQ^T += K^T dS^T               A: K^T by ldmatrix.trans, B: dS^T by movmatrix
// and dq = scale dQ. 2 queries a warp (Q and dO in shared memory leave room
// for 3 CTAs per SM at 64/64), 1 at 128/128.
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <climits>
#include <type_traits>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/bulk_copy.cuh"
#include "nsa/cuda/launch.cuh"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/query_tiles.cuh"

namespace nsa::cuda {
namespace {

using tc::kLn2;
using tc::kLog2e;
using tc::kTcKeys;
using tc::kTcThreads;
using tc::kTcWarps;

// The tensor-copy walk's shared state (walk_columns, the forward on sm_90):
// the two K/V stages' barriers, then per stage the count of warps through its
// tile.
struct StageSync {
  uint64_t bars[2];
  int through[2];
};

// The CTA's queries, and where their rows sit: after the K/V stages and the
// block union, Q (and for dq, dO) as [queries][8 heads][dim + 8] 16-bit
// elements (padding heads and queries past the end zero-filled), read as B
// fragments by ldmatrix. In registers Q^T cost 32 more per thread at 64/64,
// which spilled.
template <int DK, int DV, bool DQ>
struct ColumnsShape {
  static constexpr int kQw = DQ ? (DK + DV <= 192 ? 2 : 1) : (DK + DV <= 128 ? 4 : 2);  // queries per warp
  static constexpr int kQueries = kQw * kTcWarps;                                       // per CTA
  static_assert(kQueries <= 64, "the union marks a CTA's queries in one 64-bit mask");
  static constexpr int kLdQ = DK + tc::kSmemPad, kLdO = DV + tc::kSmemPad;
  static constexpr size_t kQOffset = (tc::QueryTiledLayout<DK, DV>::kSelectedBytes + 15) / 16 * 16;
  static constexpr size_t kOOffset = kQOffset + size_t(kQueries) * 8 * kLdQ * 2;  // dO (dq only)
  // The forward's StageSync (dq walks by cp.async: none).
  static constexpr size_t kSyncOffset = (kOOffset + (DQ ? size_t(kQueries) * 8 * kLdO * 2 : 0) + 7) / 8 * 8;
  static constexpr size_t kBytes = kSyncOffset + (DQ ? 0 : sizeof(StageSync));
  static_assert(kBytes <= kSmemBudget, "the QueryColumns tiles exceed the shared-memory budget");
};

// Rows [queries][8][D] of src (Q or dO of the CTA's queries, head gid of
// group g) into dst by cp.async, uncommitted: the caller's group.
template <typename T, int D, int LD>
__device__ __forceinline__ void copy_column_rows(T* dst, const T* src, const AttnParams& p, const tc::TcThread& cta,
                                                 int n_queries) {
  for (int e = cta.tid; e < n_queries * 8 * (D / 8); e += kTcThreads) {
    const int row = e / (D / 8), piece = e % (D / 8), qi = row / 8, head = row % 8, t = cta.t0 + qi;
    const bool valid = t <= cta.t_last && head < p.h;
    tc::cp_async_16(dst + row * LD + piece * 8,
                    src + row_offset(cta.b, valid ? t : 0, cta.g * p.h + (valid ? head : 0), p.S, p.H, D) + piece * 8,
                    valid);
  }
}

// acc^T of one 64-key tile for one query: acc[mt] = rows 16 mt + gid (+ 8) of
// `rows` (a stage of 64 keys, row stride LDR) x heads 2 tig (+ 1), reduced over
// D: S^T = K Q^T, dP^T = V dO^T. The B fragments come from the query's 8
// shared rows `cols` (stride LDC; one ldmatrix x4 per 32 dims: lanes 0-7 dims
// +0..7, 8-15 +8..15, 16-23 +16..23, 24-31 +24..31 of rows lane % 8).
// SW: `rows` is a 128-byte-swizzled tensor-copy box (dense rows of 64
// elements; the 16-byte chunk c of row r at chunk c ^ (r % 8), counted from a
// 1024-byte boundary): `sw` = this lane's XOR, the row % 8 of the rows its
// ldmatrix addresses name (lane % 8 here, and in add_t).
template <typename T, int D, int LDR, int LDC, bool SW = false>
__device__ __forceinline__ void tile_t(float (&acc)[4][4], const T* cols, const T* rows, int lane, int sw = 0) {
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;
  const T* base = rows + (lane % 8 + ((lane / 8) % 2) * 8) * LDR;
  const T* cbase = cols + (lane % 8) * LDC + (lane / 8) * 8;
#pragma unroll
  for (int k2 = 0; k2 < D / 32; ++k2) {
    uint32_t b[4];
    tc::ldmatrix_x4(b, cbase + k2 * 32);
#pragma unroll
    for (int h2 = 0; h2 < 2; ++h2) {
      const int chunk = (2 * k2 + h2) * 2 + lane / 16;
      const T* a_row = base + (SW ? chunk ^ sw : chunk) * 8;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        uint32_t a[4];
        tc::ldmatrix_x4(a, a_row + mt * 16 * LDR);
        tc::mma_16816<T>(acc[mt], a, b[2 * h2], b[2 * h2 + 1]);
      }
    }
  }
}

// out^T += M^T X^T over the tile's 64 keys (4 k-steps of 16): M = `rows` (64
// keys x DM, stride LDM; A = M^T by ldmatrix.trans), X^T = x (keys x heads, C
// layout of tile_t): O^T += V^T P^T, dQ^T += K^T dS^T.
template <typename T, int DM, int LDM, bool SW = false>
__device__ __forceinline__ void add_t(float (&out)[DM / 16][4], const float (&x)[4][4], const T* rows, int lane,
                                      int sw = 0) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    // X^T's k-step ks as a B fragment (keys 2 tig..+1, + 8, of head gid): the
    // accumulators rounded, each 8 x 8 piece transposed in registers.
    const uint32_t b0 = tc::movmatrix_trans(tc::pack2<T>(x[ks][0], x[ks][1]));
    const uint32_t b1 = tc::movmatrix_trans(tc::pack2<T>(x[ks][2], x[ks][3]));
#pragma unroll
    for (int md = 0; md < DM / 16; ++md) {
      uint32_t a[4];
      if constexpr (SW) {  // ldmatrix_a_frag_trans's rows and columns, the chunk swizzled (tile_t)
        const int chunk = md * 2 + (lane / 8) % 2;
        tc::ldmatrix_x4_trans(a, rows + (ks * 16 + lane % 8 + (lane / 16) * 8) * LDM + (chunk ^ sw) * 8);
      } else {
        tc::ldmatrix_a_frag_trans<T, LDM>(a, rows, ks * 16, md * 16, lane);
      }
      tc::mma_16816<T>(out[md], a, b0, b1);
    }
  }
}

// Is key row r (of the lane's entries e of m-tile mt) past the query, whose
// last visible row of the tile is `last`?
__device__ __forceinline__ bool past(int mt, int e, int gid, int last) { return mt * 16 + gid + 8 * (e / 2) > last; }

// The K and V tensor maps of the forward's tensor copies (sm_90, dk = dv =
// 64): K, V as [B Sk][G][64], a box = 64 rows of one group, 128-byte swizzled.
struct KvMaps {
  CUtensorMap k, v;
};

// TMA (the forward at 64/64 where tensor copies exist, sm_90): tile i's K and
// V as two tensor-copy boxes (bulk_copy.cuh) issued by the calling thread (one
// of the CTA) and counted on the stage's barrier (sync.bars[i & 1]), where cp.async
// makes every thread of the CTA form the addresses of its 16-byte pieces (ncu
// at m7c 8k: that issue was ~30 % of the instructions in the 8-warp variant,
// docs/performance.md).
// A box holds 64 consecutive rows from the tile's first key: rows past the
// pass's keys (the last block cut at t_last) are later keys or the next
// batch's, past every query of the CTA, so `past` masks them (zeros past the
// tensor's end). Measured (H200, BM_SelectedFwdTiling, docs/performance.md):
// the m7c forward 0.344 -> 0.301 ms at 8k (-13.0 %), 4.02 -> 3.30 at 64k
// (-18.1 %); one-row bulk copies (cp.async.bulk, 128 a tile) had been 2.5x
// slower than cp.async, bound by their requests.
template <typename T, int DK, int DV, typename Layout, typename Union>
__device__ __forceinline__ void issue_union_tile_tma(const AttnParams& p, const tc::TcThread& cta, Union& u, T* Ks,
                                                     T* Vs, StageSync& sync, const KvMaps& maps, int c0, int i) {
  const int s = i & 1, key0 = tc::one_block_tile(p, u, c0, i).key0;
  uint64_t* bar = &sync.bars[s];
  bulk::arrive_expect_tx(bar, kTcKeys * (DK + DV) * sizeof(T));
  const int row = cta.b * p.Sk + key0;
  bulk::copy_tensor_3d(Ks + s * Layout::kKStage, &maps.k, 0, cta.g, row, bar);
  bulk::copy_tensor_3d(Vs + s * Layout::kVStage, &maps.v, 0, cta.g, row, bar);
}

// The union walk both kernels share: for each 64-key tile of the CTA's union
// and each of the warp's QW queries that chose its block and reaches it,
// `query(j, t, key0, ks, vs)` (warp-uniform; key0 the tile's first key).
// TMA: the tiles come by tensor copies (issue_union_tile_tma; `sync`: the
// two stages' barriers, initialised to one arrival each, and counts of warps,
// zero; `maps`: K's and V's tensor maps), else by cp.async.
// There is no barrier between tiles then: a warp waits only for the tile it
// computes next to land, and the last warp through tile i (the stage's count)
// issues tile i + 2 into its stage (the count a stage's tiles add to, one a
// warp: the last warp sees 3 mod 4), so a warp whose queries took few of a
// tile's bodies runs on into the next tile while the others finish. The same
// walk on cp.async had lost (the last warp copied the whole tile, on the
// slowest warp's path: docs/performance.md); a tensor copy is two
// instructions of one thread. The CTA waits for all its warps only before the
// first tile (Q's rows, every thread's cp.async) and between passes (the next
// pass rebuilds the union, which the tiles' keys come from, and refills both
// stages).
template <typename T, int DK, int DV, int QW, bool TMA, typename Query>
__device__ __forceinline__ void walk_columns(const AttnParams& p, const tc::TcThread& cta, unsigned char* smem,
                                             StageSync* sync, const KvMaps* maps, Query&& query) {
  using L = tc::QueryTiledLayout<DK, DV>;
  using Union = typename L::SelectedUnion;
  T* Ks = reinterpret_cast<T*>(smem);
  T* Vs = Ks + 2 * L::kKStage;
  Union& u = *reinterpret_cast<Union*>(smem + L::kKvBytes);
  const int n_blocks = imin(ceil_div(cta.t_last + 1, p.sel_block), ceil_div(p.Sk, p.sel_block));
  unsigned phases = 0;  // TMA: bit s = the parity of stage s's next phase
  for (int c0 = 0; c0 < n_blocks; c0 += Union::kChunk) {
    const int n_keys = tc::build_selected_union(p, cta, u, c0, imin(Union::kChunk, n_blocks - c0));
    const auto compute = [&](int i) {
      // The tile lies in one block (sel_block % 64 == 0): its first key and
      // the block's choosers stand for every row.
      const tc::OneBlockTile tile = tc::one_block_tile(p, u, c0, i);
      const int key0 = tile.key0;
      const unsigned long long choosers = tile.choosers;
#pragma unroll
      for (int j = 0; j < QW; ++j) {
        const int qi = cta.warp + kTcWarps * j, t = cta.t0 + qi;
        if (t > cta.t_last || !((choosers >> qi) & 1ull) || key0 > t) continue;
        query(j, t, key0, Ks + (i & 1) * L::kKStage, Vs + (i & 1) * L::kVStage);
      }
    };
    const int n_tiles = ceil_div(n_keys, kTcKeys);
    if constexpr (TMA) {
      const auto issue = [&](int i) {
        issue_union_tile_tma<T, DK, DV, L>(p, cta, u, Ks, Vs, *sync, *maps, c0, i);
      };
      if (cta.tid == 0) {
        if (n_tiles > 0) issue(0);
        if (n_tiles > 1) issue(1);
      }
      if (c0 == 0) {  // the CTA's Q rows (every thread's cp.async) before any warp reads them
        tc::cp_async_wait<0>();
        __syncthreads();
      }
      for (int i = 0; i < n_tiles; ++i) {
        bulk::wait(&sync->bars[i & 1], (phases >> (i & 1)) & 1u);
        phases ^= 1u << (i & 1);
        compute(i);
        if (i + 2 < n_tiles) {  // the stage's next tile, by the last warp through this one
          __syncwarp();         // the warp's reads of the stage are done
          if (cta.lane == 0) {  // the count only grows: every counted tile adds one a warp
            __threadfence_block();
            if (atomicAdd(&sync->through[i & 1], 1) % kTcWarps == kTcWarps - 1) {
              __threadfence_block();
              issue(i + 2);
            }
          }
        }
      }
      if (c0 + Union::kChunk < n_blocks) __syncthreads();  // every warp is through the pass
    } else {
      const auto issue = [&](int i) {
        tc::issue_union_tile<T, DK, DV, L, /*ONE_BLOCK=*/true>(p, cta, u, Ks, Vs, c0, n_keys, i);
      };
      tc::kv_pipeline(n_tiles, issue, compute);
    }
  }
}

// A query's dim x heads accumulator (acc^T, C layout: rows = dims 16 md + gid,
// + 8; columns = heads 2 tig, 2 tig + 1) scaled per column (f0, f1) and
// written as rows of head gid: each 8 x 8 piece transposed back (movmatrix) so
// a lane stores two adjacent dims. `dst` = the row of head gid.
template <typename T, int D>
__device__ __forceinline__ void write_columns(T* dst, const float (&acc)[D / 16][4], float f0, float f1, bool write,
                                              int tig) {
#pragma unroll
  for (int md = 0; md < D / 16; ++md) {
    const uint32_t lo = tc::movmatrix_trans(tc::pack2<T>(acc[md][0] * f0, acc[md][1] * f1));
    const uint32_t hi = tc::movmatrix_trans(tc::pack2<T>(acc[md][2] * f0, acc[md][3] * f1));
    if (write) {
      *reinterpret_cast<uint32_t*>(dst + md * 16 + 2 * tig) = lo;
      *reinterpret_cast<uint32_t*>(dst + md * 16 + 8 + 2 * tig) = hi;
    }
  }
}

// ---- forward -------------------------------------------------------------------

// One query's state in a warp: O^T, the running max (log2 domain, scaled) and
// this lane's share of the sums of its two columns.
template <int DV>
struct QueryColumn {
  float o[DV / 16][4];
  float m[2], l[2];
};

// Online softmax over one tile's columns (raw scores s, -inf where masked),
// as softmax_update (mma_tile.cuh) does over rows: P = 2^(s scale_log2
// - m_new), O^T and l rescaled by 2^(m_old - m_new); a column that has seen
// nothing keeps m = -inf and exponentiates against 0.
template <int DV>
__device__ __forceinline__ void column_softmax_update(float (&s)[4][4], float scale_log2, QueryColumn<DV>& c) {
  float f = scale_log2;
  if (!(f > 0.f)) {  // a scale <= 0 (allowed, never used by the model) scales first
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[mt][e] = s[mt][e] == -INFINITY ? -INFINITY : s[mt][e] * f;
    f = 1.f;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    mx[0] = fmaxf(mx[0], fmaxf(s[mt][0], s[mt][2]));
    mx[1] = fmaxf(mx[1], fmaxf(s[mt][1], s[mt][3]));
  }
  float base[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    // The 8 lanes of a column (same tig) hold its keys: reduce over gid.
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 4));
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 8));
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 16));
    const float m_new = fmaxf(c.m[i], mx[i] * f);
    base[i] = m_new == -INFINITY ? 0.f : m_new;
    alpha[i] = tc::exp2_ftz(c.m[i] - base[i]);
    c.m[i] = m_new;
  }
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[mt][e] = tc::exp2_ftz(fmaf(s[mt][e], f, -base[e & 1]));  // -inf -> 0
      sum[e & 1] += s[mt][e];
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) c.l[i] = c.l[i] * alpha[i] + sum[i];
  // O^T rescaled only when some column's max moved: alpha is exactly 1
  // otherwise (2^0), so skipping the multiplies changes no bit. Past a
  // query's first tiles its running max rarely moves, and the rescale is
  // DV / 4 of a body's ~210 instructions.
  if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
    for (int md = 0; md < DV / 16; ++md) {
      c.o[md][0] *= alpha[0];
      c.o[md][1] *= alpha[1];
      c.o[md][2] *= alpha[0];
      c.o[md][3] *= alpha[1];
    }
  }
}

// A column's sum over the 8 lanes that hold its keys.
__device__ __forceinline__ float column_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 4);
  x += __shfl_xor_sync(0xffffffffu, x, 8);
  return x + __shfl_xor_sync(0xffffffffu, x, 16);
}

template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads, 3) nsa_selected_fwd_qc_kernel(const AttnParams p,
                                                                              const __grid_constant__ KvMaps maps) {
  using L = tc::QueryTiledLayout<DK, DV>;
  using C = ColumnsShape<DK, DV, false>;
  constexpr int QW = C::kQw;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const tc::TcThread cta(p);
  const int lane = cta.lane, gid = cta.gid, tig = cta.tig;
  T* Qs = reinterpret_cast<T*>(smem_raw + C::kQOffset);
  StageSync* sync = reinterpret_cast<StageSync*>(smem_raw + C::kSyncOffset);
  // One cp.async group the first tile's wait also waits for.
  copy_column_rows<T, DK, C::kLdQ>(Qs, static_cast<const T*>(p.q), p, cta, C::kQueries);
  tc::cp_async_commit();
  constexpr bool kTma = NSA_BULK_DEVICE && DK == 64 && DV == 64;  // one 128-byte box row a key
  static_assert(!kTma || (L::kKStage * sizeof(T) % 1024 == 0 && L::kVStage * sizeof(T) % 1024 == 0),
                "each tensor-copy box starts a 1024-byte swizzle period");
  if (kTma && cta.tid == 0) {  // published by the union's first barrier, before any copy
    bulk::init(&sync->bars[0], 1);
    bulk::init(&sync->bars[1], 1);
    bulk::fence_init();
    sync->through[0] = sync->through[1] = 0;
  }
  QueryColumn<DV> col[QW];
#pragma unroll
  for (int j = 0; j < QW; ++j) {
#pragma unroll
    for (int md = 0; md < DV / 16; ++md) col[j].o[md][0] = col[j].o[md][1] = col[j].o[md][2] = col[j].o[md][3] = 0.f;
    col[j].m[0] = col[j].m[1] = -INFINITY;
    col[j].l[0] = col[j].l[1] = 0.f;
  }
  const float scale_log2 = p.scale * kLog2e;
  // The tensor copies' swizzle XOR of this lane's ldmatrix rows (tile_t): the
  // stages start at multiples of 1024 bytes from smem_raw.
  const int sw = int((tc::smem_u32(smem_raw) >> 7) + lane) & 7;
  constexpr int kLdK = kTma ? DK : L::kLdK, kLdV = kTma ? DV : L::kLdV;
  walk_columns<T, DK, DV, QW, kTma>(p, cta, smem_raw, sync, &maps, [&](int j, int t, int key0, const T* ks,
                                                                          const T* vs) {
    const int qi = t - cta.t0;
    float s[4][4];
    tile_t<T, DK, kLdK, C::kLdQ, kTma>(s, Qs + qi * 8 * C::kLdQ, ks, lane, sw);
    if (const int last = t - key0; last < kTcKeys - 1) {  // the query's own block: keys past t
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (past(mt, e, gid, last)) s[mt][e] = -INFINITY;
    }
    column_softmax_update<DV>(s, scale_log2, col[j]);
    add_t<T, DV, kLdV, kTma>(col[j].o, s, vs, lane, sw);
  });

  // Normalise and write; lse by the lanes of gid 0.
#pragma unroll
  for (int j = 0; j < QW; ++j) {
    const int t = cta.t0 + cta.warp + kTcWarps * j;
    const float l[2] = {column_sum(col[j].l[0]), column_sum(col[j].l[1])};
    const bool write = t <= cta.t_last && gid < p.h;
    write_columns<T, DV>(
        static_cast<T*>(p.o) + row_offset(cta.b, write ? t : 0, cta.g * p.h + (write ? gid : 0), p.S, p.H, DV),
        col[j].o, l[0] > 0.f ? 1.f / l[0] : 0.f, l[1] > 0.f ? 1.f / l[1] : 0.f, write, tig);  // no key: o = 0
    if (gid == 0 && t <= cta.t_last) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int head = 2 * tig + i;
        if (head < p.h)
          p.lse_out[(int64_t(cta.b) * p.S + t) * p.H + cta.g * p.h + head] =
              l[i] > 0.f ? (col[j].m[i] + log2f(l[i])) * kLn2 : INFINITY;
      }
    }
  }
}

// ---- dq --------------------------------------------------------------------------

template <typename T, int DK, int DV>
__global__ void __launch_bounds__(kTcThreads, 3) nsa_selected_bwd_dq_qc_kernel(const AttnParams p) {
  using L = tc::QueryTiledLayout<DK, DV>;
  using C = ColumnsShape<DK, DV, true>;
  constexpr int QW = C::kQw;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const tc::TcThread cta(p);
  const int lane = cta.lane, gid = cta.gid, tig = cta.tig;
  T* Qs = reinterpret_cast<T*>(smem_raw + C::kQOffset);
  T* Os = reinterpret_cast<T*>(smem_raw + C::kOOffset);
  copy_column_rows<T, DK, C::kLdQ>(Qs, static_cast<const T*>(p.q), p, cta, C::kQueries);
  copy_column_rows<T, DV, C::kLdO>(Os, static_cast<const T*>(p.dout), p, cta, C::kQueries);
  tc::cp_async_commit();
  // Per query: dQ^T, and the lse (log2 domain) and delta of the lane's two
  // columns (heads 2 tig, 2 tig + 1; a padding head's are 0 and never used).
  float dq[QW][DK / 16][4], lse2[QW][2], delta[QW][2];
#pragma unroll
  for (int j = 0; j < QW; ++j) {
#pragma unroll
    for (int md = 0; md < DK / 16; ++md) dq[j][md][0] = dq[j][md][1] = dq[j][md][2] = dq[j][md][3] = 0.f;
    const int t = cta.t0 + cta.warp + kTcWarps * j;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int head = 2 * tig + i;
      const bool valid = t <= cta.t_last && head < p.h;
      const int64_t li = (int64_t(cta.b) * p.S + (valid ? t : 0)) * p.H + cta.g * p.h + (valid ? head : 0);
      lse2[j][i] = valid ? p.lse[li] * kLog2e : 0.f;
      delta[j][i] = valid ? p.delta[li] : 0.f;
    }
  }
  const float scale_log2 = p.scale * kLog2e;
  walk_columns<T, DK, DV, QW, false>(p, cta, smem_raw, nullptr, nullptr, [&](int j, int t, int key0, const T* ks,
                                                                               const T* vs) {
    const int qi = t - cta.t0, last = t - key0;
    float s[4][4], dp[4][4];
    tile_t<T, DK, L::kLdK, C::kLdQ>(s, Qs + qi * 8 * C::kLdQ, ks, lane);
    tile_t<T, DV, L::kLdV, C::kLdO>(dp, Os + qi * 8 * C::kLdO, vs, lane);
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // lse = +inf (the query saw no key) gives P = 0.
        const float pr = past(mt, e, gid, last) ? 0.f : tc::exp2_ftz(fmaf(s[mt][e], scale_log2, -lse2[j][e & 1]));
        s[mt][e] = pr * (dp[mt][e] - delta[j][e & 1]);  // dS^T
      }
    }
    add_t<T, DK, L::kLdK>(dq[j], s, ks, lane);
  });

#pragma unroll
  for (int j = 0; j < QW; ++j) {
    const int t = cta.t0 + cta.warp + kTcWarps * j;
    const bool write = t <= cta.t_last && gid < p.h;
    write_columns<T, DK>(
        static_cast<T*>(p.dq_out) + row_offset(cta.b, write ? t : 0, cta.g * p.h + (write ? gid : 0), p.S, p.H, DK),
        dq[j], p.scale, p.scale, write, tig);
  }
}

// Both launchers: the query tiling (q_tile queries x all h heads of one (b, g)).
template <int DK, int DV, bool DQ>
dim3 columns_grid(AttnParams& p) {
  p.sel_split_keys = 0;
  p.q_tile = ColumnsShape<DK, DV, DQ>::kQueries;
  p.head_chunk = p.h;
  p.rows = p.q_tile * p.h;
  return dim3(ceil_div(p.S, p.q_tile), p.B * p.G);
}

constexpr bool tiles(int dk, int dv) { return (dk == 64 || dk == 128) && (dv == 64 || dv == 128); }

// The forward's tensor maps (KvMaps), where its code copies by tensor: dk = dv
// = 64 on a device of compute capability 9.0 or more (its sm_90a code); zeros
// elsewhere, which the cp.async code never reads. The encoder comes from the
// driver (no link against libcuda); a map is 128 bytes of host work a launch.
template <typename T, int DK, int DV>
KvMaps forward_kv_maps(const AttnParams& p) {
  KvMaps maps{};
  if (!(DK == 64 && DV == 64) || at::cuda::getCurrentDeviceProperties()->major < 9) return maps;
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    NSA_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    TORCH_CHECK(found == cudaDriverEntryPointSuccess && fn != nullptr,
                "the selected forward's tensor copies: cuTensorMapEncodeTiled is not in this driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  const auto encode_one = [&](CUtensorMap* map, const void* base, int d, const char* name) {
    // [B Sk][G][d], innermost first; a box = d elements x 1 group x 64 rows.
    const cuuint64_t dims[3] = {cuuint64_t(d), cuuint64_t(p.G), cuuint64_t(p.B) * cuuint64_t(p.Sk)};
    const cuuint64_t strides[2] = {cuuint64_t(d) * sizeof(T), cuuint64_t(p.G) * d * sizeof(T)};
    const cuuint32_t box[3] = {cuuint32_t(d), 1, cuuint32_t(kTcKeys)};
    const cuuint32_t step[3] = {1, 1, 1};
    const CUresult r =
        encode(map, std::is_same_v<T, c10::BFloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
               3, const_cast<void*>(base), dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    TORCH_CHECK(r == CUDA_SUCCESS, "the selected forward's tensor map of ", name, ": cuTensorMapEncodeTiled returned ",
                int(r), " (", name, " must be 16-byte aligned)");
  };
  encode_one(&maps.k, p.k, DK, "K");
  encode_one(&maps.v, p.v, DV, "V");
  return maps;
}

}  // namespace

bool selected_query_columns_tiles(int dk, int dv) { return tiles(dk, dv); }

template <typename T, int DK, int DV>
void launch_selected_columns(AttnParams& p, bool dq) {
  if constexpr (tiles(DK, DV)) {
    // walk_columns copies each tile as one block's consecutive keys (issue_union_tile's ONE_BLOCK).
    TORCH_CHECK(p.sel_block % kTcKeys == 0, "the QueryColumns kernels need sel_block a multiple of ", kTcKeys,
                "; got ", p.sel_block);
    if (dq)
      launch_kernel(nsa_selected_bwd_dq_qc_kernel<T, DK, DV>, columns_grid<DK, DV, true>(p), kTcThreads,
                    ColumnsShape<DK, DV, true>::kBytes, p);
    else
      launch_kernel(nsa_selected_fwd_qc_kernel<T, DK, DV>, columns_grid<DK, DV, false>(p), kTcThreads,
                    ColumnsShape<DK, DV, false>::kBytes, p, forward_kv_maps<T, DK, DV>(p));
  } else {
    TORCH_CHECK(false, "the QueryColumns kernels tile dk, dv in {64, 128}; asked for ", DK, "/", DV);
  }
}

#define NSA_QC_INSTANTIATE(DK, DV)                                                             \
  template void launch_selected_columns<c10::BFloat16, DK, DV>(AttnParams & p, bool dq); \
  template void launch_selected_columns<c10::Half, DK, DV>(AttnParams & p, bool dq);
NSA_TC_DIMS(NSA_QC_INSTANTIATE)
#undef NSA_QC_INSTANTIATE

}  // namespace nsa::cuda
