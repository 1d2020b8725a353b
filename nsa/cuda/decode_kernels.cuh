// Internal to the decode kernels (decode_attention.cu, decode_attention_tc.cu):
// the parameter block, the workspace layout, and which keys each split-K CTA
// ("slot") reads. Index arithmetic comes from attention_ranges.h, the same
// functions the prefill kernels and the benchmarks' KV-token counts use.
//
// Slots of one (b, g), in this order:
//   [0, n_cmp_split)                      compressed keys [0, n_cmp(t)), split evenly
//   [n_cmp_split, + n_win_split)          window keys [max(0, t-w+1), t], split evenly
//   [n_cmp_split + n_win_split, n_slots)  one per selected block (slot s <-> block_idx[s])
// Every slot writes its partial (m, l, o) for the heads of its CTA, empty or not
// (m = -inf, l = 0, o = 0), so nothing downstream reads stale memory.
#pragma once

#include <cstdint>
#include <utility>

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include "nsa/cuda/attention_common.cuh"

namespace nsa::cuda::decode {

constexpr int kMaxHeadChunk = 16;  // query heads per partial CTA: one m16 tile in v2
constexpr int kWinChunk = 64;      // window keys per split-K CTA
constexpr int kSelectThreads = 256;
constexpr int kSelectBlocks = 64;  // selection blocks per select CTA (their keys: about one per thread)

struct Params {
  const void* q = nullptr;               // [B,1,H,dk]
  const void* k[3] = {};                 // by int(Branch): Window, Compressed, Selected
  const void* v[3] = {};
  int n_keys[3] = {};                    // rows of k[i] / v[i]: Cap, CapC, Cap
  void* o[3] = {};                       // [B,1,H,dv] by int(Branch)
  float* lse[3] = {};                    // [B,H] by int(Branch), or null: logsumexp of the branch's scores
  const int* len = nullptr;              // [B] or [1]
  int len_stride = 0;                    // 1, or 0 when one length serves every row
  int* block_idx = nullptr;              // [B,1,G,n_sel]
  float* scores = nullptr;               // [B*G][h][CapC] raw compressed scores s = scale q.k
  float* block_score = nullptr;          // [B*G][n_blocks] the selection blocks' importance
  float* part_o = nullptr;               // [B*G][n_slots][h][dv] unnormalised partial outputs
  float* part_ml = nullptr;              // [B*G][n_slots][h][2] partial (max, sum of exp)
  unsigned* counters = nullptr;          // [B*G] select CTAs done (reset by the last)
  int B = 0, H = 0, G = 0, h = 0, dk = 0, dv = 0, cap = 0, cap_c = 0, n_blocks = 0;
  int cmp_block = 0, cmp_stride = 0, sel_block = 0, n_sel = 0, window = 0;
  int n_cmp_split = 1, n_win_split = 1, n_slots = 0;
  int head_chunk = 1, n_head_chunks = 1, n_col_chunks = 1;
  float scale = 0.f;
};

#if defined(__CUDACC__)
// t = len - 1 of row b; len is clamped to [0, Cap], so t = -1 is an empty prefix.
__device__ __forceinline__ int step_t(const Params& p, int b) {
  return imin(imax(p.len[b * p.len_stride], 0), p.cap) - 1;
}

// Compressed blocks visible to t that the cache holds: [0, nc).
__device__ __forceinline__ int visible_cmp(const Params& p, int t) {
  int lo, hi;
  contiguous_key_range(Branch::Compressed, t, t, p.cap_c, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
  return hi;
}

struct SlotKeys {
  Branch br;
  int lo, hi;  // keys [lo, hi) of k[br] / v[br]
};
__device__ __forceinline__ SlotKeys slot_keys(const Params& p, int b, int g, int t, int slot) {
  SlotKeys r{Branch::Selected, 0, 0};
  if (t < 0) return r;
  int lo = 0, hi = 0, split = 0, n_split = 1;
  if (slot < p.n_cmp_split) {
    r.br = Branch::Compressed;
    contiguous_key_range(Branch::Compressed, t, t, p.cap_c, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
    split = slot, n_split = p.n_cmp_split;
  } else if (slot < p.n_cmp_split + p.n_win_split) {
    r.br = Branch::Window;
    contiguous_key_range(Branch::Window, t, t, p.cap, p.window, p.cmp_block, p.cmp_stride, &lo, &hi);
    split = slot - p.n_cmp_split, n_split = p.n_win_split;
  } else {
    const int s = slot - p.n_cmp_split - p.n_win_split;
    const int j = p.block_idx[(b * p.G + g) * p.n_sel + s];
    selected_key_range(j, t, p.cap, p.sel_block, &r.lo, &r.hi);
    return r;
  }
  // Even split of a contiguous range: chunk follows the current length, so every
  // CTA has work at any length (the grid itself is fixed by the capacity).
  const int chunk = ceil_div(hi - lo, n_split);
  r.lo = imin(lo + split * chunk, hi);
  r.hi = imin(r.lo + chunk, hi);
  return r;
}

// Programmatic dependent launch (sm_90 and later): the step's four launches are
// dependent and each is short, so the gap between one grid's end and the next
// one's start is a large part of the step. A kernel launched "after the
// previous" (launch_chained) may start while its predecessor still runs: it
// first lets its own successor be launched, then waits until the predecessor
// has completed and its memory is visible, before it reads or writes anything.
// Correctness is stream order's: each wait returns only after the predecessor
// (which itself waited for its own) has finished. Elsewhere, and in a kernel
// launched plainly, both instructions do nothing. chain_release alone is for
// a kernel whose successor is chained but which waits for nothing itself
// (DecodeGraph's length kernel, decode_lengths.cu).
__device__ __forceinline__ void chain_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void chain_start() {
  chain_release();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Workspace offsets.
__device__ __forceinline__ int64_t part_row(const Params& p, int bg, int slot, int head) {
  return (int64_t(bg) * p.n_slots + slot) * p.h + head;
}
#endif

}  // namespace nsa::cuda::decode

namespace nsa::cuda {
namespace decode {
#if defined(__CUDACC__)
// Launches kernel<<<grid, block, smem, stream>>>(args...), where `chained` as a
// programmatic dependent launch of the stream's previous kernel (chain_start).
template <typename... Params, typename... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                    bool chained, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = chained ? attr : nullptr;
  cfg.numAttrs = chained ? 1 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}
#endif
}  // namespace decode

// Launchers of the split-K partial kernels for slots [slot0, slot0 + n) of every
// (b, g, head chunk), on the current stream.
// (chained: as a programmatic dependent launch of the stream's previous kernel.)
void launch_decode_partial_v1(at::ScalarType dtype, const decode::Params& p, int slot0, int n, bool chained);
void launch_decode_partial_v2(at::ScalarType dtype, const decode::Params& p, int slot0, int n, bool chained);
// Shared memory the v2 kernel needs (bytes), for the planner's checks.
size_t decode_v2_smem_bytes(int dk, int dv);
}  // namespace nsa::cuda
