// Shared pieces of the attention kernels (forward, dq, dk/dv) of all three
// branches: the parameter block, tile sizes, shared-memory layouts (one
// function per kernel, used by the launcher and the kernel alike so they never
// disagree), warp reductions and the dtype dispatch.
//
// Precision: inputs are fp32/fp16/bf16; every product, softmax and accumulator
// is fp32 (DESIGN.md §2). Outputs are written in the input dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include <c10/core/ScalarType.h>  // at::kFloat, at::Half, at::BFloat16 (the dispatch below)
#include <c10/util/Exception.h>   // TORCH_CHECK

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/fast_div.h"

namespace nsa::cuda {

constexpr int kThreads = 256;         // 8 warps per CTA, every attention kernel
constexpr int kKeyTile = 32;          // keys per tile in the query-centric kernels (one per lane)
// Shared memory a tiling may use: leaves room for 2 CTAs per SM on sm_90 and
// stays under sm_80's 163 KB opt-in limit.
constexpr size_t kSmemBudget = 112 * 1024;

// One parameter block for every attention kernel; unused fields stay 0/null.
struct AttnParams {
  // Tensors (layouts in nsa_cuda.h). Typed pointers are cast in the kernel.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* dout = nullptr;
  void* o = nullptr;
  void* dq_out = nullptr;
  void* dk_out = nullptr;
  void* dv_out = nullptr;
  float* lse_out = nullptr;       // [B,S,H] written by the forward
  const float* lse = nullptr;     // [B,S,H] read by the backward (+inf: no visible key)
  const float* delta = nullptr;   // [B,S,H] rowsum(dO * O)
  const int* block_idx = nullptr;      // selected: [B,S,G,n_sel]
  // The selected branch's reverse index (reverse_index.h), for the dk/dv and
  // KeyOuter kernels (whose forward builds its own).
  const int* rev_query = nullptr;      // queries grouped by (b,g,block)
  const int64_t* rev_offset = nullptr; // [B*G*n_blocks + 1]
  const int* rev_slot = nullptr;       // each rev_query entry's slot in its block_idx row
  // Sizes.
  int B = 0, S = 0, Sk = 0, H = 0, G = 0, h = 0, dk = 0, dv = 0;
  float scale = 0.f;
  // Branch hyper-parameters.
  int window = 0, cmp_block = 0, cmp_stride = 0, sel_block = 0, n_sel = 0, n_blocks = 0;
  FastDiv by_sel_block;  // sel_block as a divisor (fast_div.h), for the tile loops
  // Tiling, filled by the launchers.
  int q_tile = 1;      // query-centric: consecutive queries per CTA
  int head_chunk = 1;  // query-centric: heads of the group per CTA
  int rows = 1;        // query-centric: q_tile * head_chunk; key-centric: rows per chunk
  int key_tile = kKeyTile;  // key-centric: keys per CTA
  // v2 Selected: 1 = the 4 warps hold the same <= 16 rows and split each tile's
  // keys; 0 = each warp owns 16 of 64 rows (launch.cuh, tc_query_grid).
  int sel_split_keys = 0;
  // v2 dk/dv: the row tiles of a key tile split over gridDim.z CTAs when the
  // key tiles alone leave SMs idle (the compressed branch has S/d keys: 32 CTAs
  // at S=2048). Each split writes its fp32 partial dK·scale | dV to
  // dkdv_partial [row_splits][B][Sk][G][dk+dv]; a reduction sums them in split
  // order (attention_bwd_dkdv_tc.cu), so results stay bitwise reproducible.
  int row_splits = 1;
  float* dkdv_partial = nullptr;
  // With dq in fp32 atomics (BackwardDq::atomic: the backward is not
  // reproducible anyway) the splits add their dK·scale | dV into one zeroed
  // fp32 accumulator instead, dkdv_partial [B][Sk][G][dk+dv], in the same
  // atomics, and the reduction converts it: no partial per split in DRAM.
  bool dkdv_atomic = false;
  // With dkdv_atomic, the selected dk/dv kernel's CTAs may take their work
  // from a list instead of the grid: item blockIdx.x of dkdv_items is {key
  // tile, (b, g), split, splits of that key tile}, the first *dkdv_n_items
  // of them; CTAs past the count own nothing. Each key tile splits by its
  // own rows (attention_bwd_dkdv_tc.cu, nsa_dkdv_items_kernel).
  const int4* dkdv_items = nullptr;
  const int* dkdv_n_items = nullptr;
  // Selected backward with BackwardDq::atomic or ::slots: the caller asks the
  // v2 dk/dv launcher for dq too (dq_in_dkdv; dq_slots for slots); the
  // launcher sets dq_done when it ran the kernel that adds dS K into the fp32
  // accumulator dq_accum [B,S,H,dk] (zeroed by it; atomic) or writes each
  // (query, block) pair's scale dS K to dq_part (slots) and wrote dq_out from
  // it; otherwise the caller runs the dq kernel.
  bool dq_in_dkdv = false, dq_slots = false, dq_done = false;
  float* dq_accum = nullptr;
  void* dq_part = nullptr;  // slots: [B][S][G][n_sel][h][dk] in the input dtype
  // The order a grid starts its CTAs (GridSlot): the heaviest tiles first
  // (true, the default), or blockIdx order (nsa_cuda.h, set_cta_order).
  bool heavy_first = true;
};

// ---- shared-memory layouts (in floats; row pads of +1 avoid bank conflicts
// where a warp walks down a column) ------------------------------------------
NSA_HD size_t fwd_smem_floats(int R, int dk, int dv) {
  return size_t(R) * (dk + 1) + size_t(kKeyTile) * (dk + 1) + size_t(kKeyTile) * dv +
         size_t(R) * (kKeyTile + 1) + size_t(R) * dv + 5 * size_t(R);
}
NSA_HD size_t dq_smem_floats(int R, int dk, int dv) {
  return size_t(R) * (dk + 1) + size_t(R) * (dv + 1) + size_t(kKeyTile) * (dk + 1) +
         size_t(kKeyTile) * (dv + 1) + size_t(R) * dk + size_t(R) * (kKeyTile + 1) + 4 * size_t(R);
}
NSA_HD size_t dkdv_smem_floats(int R, int BK, int dk, int dv) {
  return size_t(BK) * (dk + 1) + size_t(BK) * (dv + 1) + size_t(BK) * dk + size_t(BK) * dv +
         size_t(R) * (dk + 1) + size_t(R) * (dv + 1) + 2 * size_t(R) * (BK + 1) + 3 * size_t(R);
}

// ---- device helpers ----------------------------------------------------------
#if defined(__CUDACC__)
__device__ __forceinline__ float warp_max(float x) {
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}
template <typename T>
__device__ __forceinline__ float to_f(T x) {
  return static_cast<float>(x);
}

// Which work a CTA of a 2- or 3-dimensional grid takes. The hardware starts
// CTAs in linear blockIdx order (x fastest; what it does in practice, not a
// documented guarantee: BM_*Order measure it), so in `Grid` order the work
// starts as blockIdx names it; `heavy_first` (AttnParams::heavy_first, the
// default) re-reads the linear index with the tile dimension slowest, so that
// the tiles with the most work start in the first wave, not the last: a long
// CTA started late is the kernel's tail, with the SMs around it idle.
//   query-tiled grids  the last query tile first: under the causal mask a later
//                      query sees more compressed keys and chooses more blocks
//   key-tiled grids    the first key tile first: selected block 0 is chosen by
//                      every query (forced), a compressed key tile is seen by
//                      every later query; the row splits of a tile adjacent
// Each CTA's work is the same either way (no CTA reads another's result), so
// results are the same bits; only the start order, and so the tail, changes.
struct GridSlot {
  int tile, y, z;  // the tile (x's range), then blockIdx.y's and .z's ranges
  __device__ __forceinline__ static GridSlot of(bool heavy_first, bool last_tile_first) {
    if (!heavy_first) return {int(blockIdx.x), int(blockIdx.y), int(blockIdx.z)};
    const int lin = int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
    const int z = lin % int(gridDim.z), rest = lin / int(gridDim.z);
    const int y = rest % int(gridDim.y), tile = rest / int(gridDim.y);
    return {last_tile_first ? int(gridDim.x) - 1 - tile : tile, y, z};
  }
};

// A CTA of the query-tiled grids (v1 forward and dq, v2 forward and dq):
// blockIdx.y = (batch, KV group, head chunk), blockIdx.x = a tile of q_tile
// consecutive queries t0..t_last (one query for Selected), both as GridSlot
// orders them.
struct QueryCta {
  int b, g, chunk, t0, t_last;
  __device__ __forceinline__ explicit QueryCta(const AttnParams& p) {
    const GridSlot slot = GridSlot::of(p.heavy_first, /*last_tile_first=*/true);
    const int n_chunks = (p.h + p.head_chunk - 1) / p.head_chunk;
    const int bg = slot.y / n_chunks;
    chunk = slot.y % n_chunks, b = bg / p.G, g = bg % p.G;
    t0 = slot.tile * p.q_tile;
    t_last = (t0 + p.q_tile < p.S ? t0 + p.q_tile : p.S) - 1;
  }
  // Row r of the CTA = query t0 + r / head_chunk, head chunk * head_chunk +
  // r % head_chunk: its query (-1 for a padding row) and global head (clamped).
  __device__ __forceinline__ int row(const AttnParams& p, int r, int* hq) const {
    const int qi = r / p.head_chunk, head = chunk * p.head_chunk + r % p.head_chunk;
    *hq = g * p.h + (head < p.h ? head : p.h - 1);
    return (qi < p.q_tile && t0 + qi < p.S && head < p.h) ? t0 + qi : -1;
  }
};

// A CTA of the key-tiled grids (dk/dv, v1 and v2): blockIdx.y = (batch, KV
// group); blockIdx.x = a tile of up to BK keys [k0, k1) — for Selected, of one
// selected block j (a block wider than BK takes several tiles) — and the queries
// that see them: q_list[0..n_q) from the reverse index (Selected), or
// q_lo .. q_lo + n_q - 1; blockIdx.z = the row split (v2); all three as
// GridSlot orders them. k0 >= k1: a tile past the end, owning no key.
struct KeyCta {
  int b, g, k0, k1, j = -1, q_lo = 0, n_q = 0, split = 0, splits = 1;  // splits: of this key tile's rows
  const int* q_list = nullptr;
  const int* slot_list = nullptr;  // Selected: the entries' slots (p.rev_slot), where given
  template <Branch BR>
  __device__ __forceinline__ static KeyCta make(const AttnParams& p, int BK) {
    KeyCta c;
    GridSlot slot;
    if (p.dkdv_items != nullptr) {  // a work list's item (AttnParams::dkdv_items)
      if (int(blockIdx.x) >= *p.dkdv_n_items) {
        c.k0 = c.k1 = 0;  // owns no key
        return c;
      }
      const int4 item = p.dkdv_items[blockIdx.x];
      slot = {item.x, item.y, item.z};
      c.splits = item.w;
    } else {
      slot = GridSlot::of(p.heavy_first, /*last_tile_first=*/false);
      c.splits = p.row_splits;
    }
    c.b = slot.y / p.G, c.g = slot.y % p.G, c.split = slot.z;
    if (BR == Branch::Selected) {
      const int tiles_per_block = (p.sel_block + BK - 1) / BK;
      c.j = slot.tile / tiles_per_block;
      c.k0 = c.j * p.sel_block + (slot.tile % tiles_per_block) * BK;
      c.k1 = imin(imin(c.k0 + BK, (c.j + 1) * p.sel_block), p.Sk);
      const int64_t key = (int64_t(c.b) * p.G + c.g) * p.n_blocks + c.j;
      const int64_t off = p.rev_offset[key];
      c.q_list = p.rev_query + off;
      if (p.rev_slot != nullptr) c.slot_list = p.rev_slot + off;
      c.n_q = int(p.rev_offset[key + 1] - off);
    } else {
      c.k0 = slot.tile * BK;
      c.k1 = imin(c.k0 + BK, p.Sk);
      int q_hi;
      contiguous_query_range(BR, c.k0, c.k1, p.S, p.window, p.cmp_block, p.cmp_stride, &c.q_lo, &q_hi);
      c.n_q = q_hi - c.q_lo;
    }
    return c;
  }
  __device__ __forceinline__ int query(int i) const { return q_list ? q_list[i] : q_lo + i; }
};
#endif

// Element offsets into the [B, S, heads, dim] tensors.
NSA_HD int64_t row_offset(int b, int t, int head, int S, int heads, int dim) {
  return ((int64_t(b) * S + t) * heads + head) * dim;
}

}  // namespace nsa::cuda

// fp32 / fp16 / bf16 only (no double: the kernels are fp32 inside anyway).
#define NSA_DISPATCH_FLOAT_TYPES(dtype, name, ...)                                  \
  [&] {                                                                             \
    switch (dtype) {                                                                \
      case at::kFloat: {                                                            \
        using scalar_t = float;                                                     \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      case at::kHalf: {                                                             \
        using scalar_t = at::Half;                                                  \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      case at::kBFloat16: {                                                         \
        using scalar_t = at::BFloat16;                                              \
        return __VA_ARGS__();                                                       \
      }                                                                             \
      default:                                                                      \
        TORCH_CHECK(false, name, ": unsupported dtype ", dtype,                     \
                    " (float32, float16, bfloat16 only)");                          \
    }                                                                               \
  }()
