// Host-side launch glue every attention launcher shares (v1 and v2; forward,
// dq, dk/dv): pick the branch's kernel among its three names, raise its
// dynamic shared-memory limit, launch on the current stream, check the launch;
// v2's query tiling, which the forward and dq kernels share; v2's front door
// (dtype, alignment, head dims); and the macros that give every kernel its
// three branch names. The kernels' arithmetic is untouched by it.
#pragma once

#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/mma_tile.cuh"
#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {

// The three kernels of one attention kernel, one per branch: each branch has
// its own name so a kernel trace tells them apart (kernel_registry.cpp).
template <typename Kernel>
struct BranchKernels {
  Kernel window, compressed, selected;
  Kernel pick(Branch br) const {
    return br == Branch::Window ? window : br == Branch::Compressed ? compressed : selected;
  }
};

// `smem` bytes may exceed the 48 KB default, so the limit is raised per kernel
// first. `args`: the kernel's parameters (AttnParams, and for some kernels a
// record of their own after it).
template <typename Kernel, typename... Args>
void launch_kernel(Kernel kernel, dim3 grid, int threads, size_t smem, const Args&... args) {
  NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<grid, threads, smem, at::cuda::getCurrentCUDAStream()>>>(args...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// How many CTAs of `threads` threads and `smem` dynamic shared-memory bytes
// the device holds at once per SM for `kernel` (its limit raised first, as
// launch_kernel does): a host query, for launchers that size their work by it.
template <typename Kernel>
int resident_ctas_per_sm(Kernel kernel, int threads, size_t smem) {
  NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int ctas = 0;
  NSA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem));
  return ctas;
}

// v2 Selected: do the CTA's queries walk one union of chosen blocks with 64 rows
// (each warp owns 16; SharedRows), or hold <= 16 rows in all 4 warps that split
// every tile's keys (SplitKeys)? SharedRows loads each block once for 64/h
// queries, which pays while the union stays small: when the sequence has few
// blocks for n to choose from (short sequences, and trained models whose
// neighbouring queries choose alike). With many blocks and unrelated choices the
// union grows to ~64/h x n blocks, a tile then serves one warp and three wait;
// SplitKeys keeps all four busy. The threshold (8 n candidate blocks = 8k tokens
// at n = 16, l' = 64) is from the v2 benchmark (docs/performance.md).
inline bool selected_split_keys(const AttnParams& p) {
  const SelectedTiling forced = selected_tiling();
  if (forced == SelectedTiling::SharedRows || forced == SelectedTiling::SplitKeys)
    return forced == SelectedTiling::SplitKeys;
  return ceil_div(p.Sk, p.sel_block) > 8 * p.n_sel;
}

// The QueryColumns kernels (selected_columns.cu): the (dk, dv) pairs they
// tile, and their launcher (sets the query tiling, launches the forward, or
// dq when `dq`).
bool selected_query_columns_tiles(int dk, int dv);
template <typename T, int DK, int DV>
void launch_selected_columns(AttnParams& p, bool dq);

// Do the selected forward and dq run with each query's heads as the MMA columns?
// Where it applies: a group of at most 8 heads (one 8-column n-tile per
// query) and blocks of whole 64-key tiles (one chooser mask per tile). By
// default from 4 n candidate blocks on: measured faster at 8 n and 64 n (m7c
// 8k, 64k: forward -21 %, -25 %, dq + dk/dv -9 %, -21 %), slower at 2 n (the
// m7c training shape: +7 %, +11 %), where every query chooses most of the
// blocks it sees (selected_columns.cu).
inline bool selected_query_columns(const AttnParams& p) {
  const bool fits = p.h <= 8 && p.sel_block % tc::kTcKeys == 0 && selected_query_columns_tiles(p.dk, p.dv);
  const SelectedTiling forced = selected_tiling();
  if (forced != SelectedTiling::Auto) return fits && forced == SelectedTiling::QueryColumns;
  return fits && ceil_div(p.Sk, p.sel_block) >= 4 * p.n_sel;
}

// wgmma_declines() is "" (nsa_cuda.h): the warpgroup-MMA kernels can run here.
// Worked out once, on the device that first asks (attention_fwd_tc.cu).
bool wgmma_runs();
// Does a selected kernel with both MMAs (SelectedMma, nsa_cuda.h) run on
// wgmma? Where it runs: when asked, or under Auto where `by_default`.
bool selected_wgmma(SelectedMma asked, bool by_default);

// The KeyOuter forward and dq (selected_key_outer.cu): where they apply
// (sel_block = 64, n <= 32), and their launchers (reverse index, then per chunk
// of queries its units, its partials and their merge). dk/dv is key-centric
// already.
bool selected_key_outer_applies(const AttnParams& p);
template <typename T, int DK, int DV>
void launch_selected_key_outer(AttnParams& p);
template <typename T, int DK, int DV>
void launch_selected_key_outer_dq(AttnParams& p);

// BackwardDq::slots (the selected dk/dv kernel writes each (query, block)
// pair's scale dS K to the block's slot of dq_part, selected_key_outer.cu's
// partial layout for the whole sequence): the bytes of dq_part, whether the
// route applies (one 64-key tile a block, n <= 32, the reverse index's slots,
// dq_part within kSlotsBudgetBytes), and the merge that sums a row's slots in
// slot order into dq_out. The budget: the scratch grows as S (paper_kernel
// 3.2 GB at 8k, 26 GB at 64k) and measured (H200, BM_SelectedBwdDq,
// docs/performance.md) no faster than the dq kernel at paper 64k (64.6 ms
// both), faster where it is small: m7c 64k (1.6 GB) 4.37 against 5.73 ms,
// paper 8k 6.74 against 7.90.
constexpr int64_t kSlotsBudgetBytes = int64_t(4) << 30;
int64_t selected_dq_slots_bytes(const AttnParams& p, int dk, size_t elem_bytes);
bool selected_dq_slots_apply(Branch br, const AttnParams& p, int dk, size_t elem_bytes);
template <typename T, int DK, int DV>
void launch_selected_dq_slots_merge(const AttnParams& p);

// Does the selected forward (dq: its backward's dq) run KeyOuter? Where it
// applies, when asked for (set_selected_tiling), and by default from 8 n
// candidate blocks on (the forward: 16 n where QueryColumns would run
// instead): with unrelated choices the query-tiled kernels read each block
// once per query, KeyOuter once per block and chunk. Measured (H200,
// BM_Selected{Fwd,Bwd}Tiling, docs/performance.md): forward paper_kernel 8k /
// 64k 4.50 / 50.3 ms query-tiled against 2.84 / 23.7 KeyOuter; m7c at 8k
// QueryColumns 0.390 against 0.434, at 16k 0.925 against 0.802; backward
// (dq + dk/dv) paper_kernel 8k / 64k 10.2 / 104 against 8.90 / 70.7, m7c 8k /
// 64k QueryColumns 0.896 / 8.61 against 0.858 / 6.49; the m7c training shape
// (batch 8, 2k: 2 n blocks, neighbours share most) SharedRows forward 0.373
// against 0.652, backward 0.912 against 1.19.
inline bool selected_key_outer(const AttnParams& p, bool dq) {
  if (!selected_key_outer_applies(p)) return false;
  const SelectedTiling forced = selected_tiling();
  if (forced != SelectedTiling::Auto) return forced == SelectedTiling::KeyOuter;
  return ceil_div(p.Sk, p.sel_block) >= (!dq && selected_query_columns(p) ? 16 : 8) * p.n_sel;
}

// v2 query tiling (tc kernels), every branch: `rows` rows of queries × heads per
// CTA (64; 16 for Selected's SplitKeys), whole head groups of several
// consecutive queries when a group has fewer heads than that (Selected: those
// queries share each chosen block's K/V tile). Sets q_tile, head_chunk, rows and
// sel_split_keys; returns the grid.
inline dim3 tc_query_grid(Branch br, AttnParams& p) {
  p.sel_split_keys = br == Branch::Selected && selected_split_keys(p);
  const int rows_win = p.sel_split_keys ? 16 : tc::kTcRowsWin;
  if (p.h >= rows_win) {
    p.q_tile = 1;
    p.head_chunk = rows_win;
  } else {
    p.head_chunk = p.h;
    p.q_tile = rows_win / p.h;
  }
  p.rows = p.q_tile * p.head_chunk;
  return dim3(ceil_div(p.S, p.q_tile), p.B * p.G * ceil_div(p.h, p.head_chunk));
}

// A v2 launcher for the kernels tiled by queries (forward, dq), with the
// three branch kernels of one (T, DK, DV): `Layout` gives the shared memory of
// Selected (K/V stages and its block union) and of the others.
template <typename Layout, typename Kernel>
void launch_tc_query_kernel(Branch br, AttnParams& p, BranchKernels<Kernel> kernels) {
  static_assert(Layout::kSelectedBytes <= kSmemBudget, "Selected's shared memory exceeds the budget");
  const size_t smem = br == Branch::Selected ? Layout::kSelectedBytes : Layout::kKvBytes;
  const dim3 grid = tc_query_grid(br, p);
  launch_kernel(kernels.pick(br), grid, tc::kTcThreads, smem, p);
}

// A v1 launcher for the kernels tiled by queries (forward, dq): the largest
// row tiling whose shared memory (`smem_floats`) fits, one CTA per query tile
// and (batch, group, head chunk).
template <typename Kernel>
void launch_v1_query_kernel(Branch br, AttnParams& p, size_t (*smem_floats)(int, int, int),
                            BranchKernels<Kernel> kernels) {
  choose_query_tiling(br, smem_floats, p);
  const dim3 grid(ceil_div(p.S, p.q_tile), p.B * p.G * ceil_div(p.h, p.head_chunk));
  launch_kernel(kernels.pick(br), grid, kThreads, smem_floats(p.rows, p.dk, p.dv) * sizeof(float), p);
}

// Three kernel names per attention kernel, one per branch, so a kernel trace
// tells the branches apart (kernel_registry.cpp lists them):
// nsa_{window,compressed,selected}_STEM_kernel, each running its branch's body,
// and STEM_kernels<...>() that returns the three (BranchKernels).
// v1: one body templated on the branch, for every dtype.
#define NSA_V1_BRANCH_KERNELS(STEM, BODY)                                                                       \
  template <typename T>                                                                                         \
  __global__ void __launch_bounds__(kThreads) nsa_window_##STEM##_kernel(AttnParams p) {                        \
    BODY<T, Branch::Window>(p);                                                                                 \
  }                                                                                                             \
  template <typename T>                                                                                         \
  __global__ void __launch_bounds__(kThreads) nsa_compressed_##STEM##_kernel(AttnParams p) {                    \
    BODY<T, Branch::Compressed>(p);                                                                             \
  }                                                                                                             \
  template <typename T>                                                                                         \
  __global__ void __launch_bounds__(kThreads) nsa_selected_##STEM##_kernel(AttnParams p) {                      \
    BODY<T, Branch::Selected>(p);                                                                               \
  }                                                                                                             \
  template <typename T>                                                                                         \
  BranchKernels<void (*)(AttnParams)> STEM##_kernels() {                                                        \
    return {nsa_window_##STEM##_kernel<T>, nsa_compressed_##STEM##_kernel<T>, nsa_selected_##STEM##_kernel<T>}; \
  }

// The v2 kernel families; each asks the compiler for its own number of resident
// CTAs per SM (min_ctas_per_sm).
enum class TcFamily { Forward, Dq, Dkdv, DkdvDq };

// Resident CTAs per SM a v2 kernel asks of the compiler (__launch_bounds__),
// which caps its registers per thread at 64K / (128 CTAs): 128 at 4, 168 at 3.
// Wider heads than 64/64 keep the compiler's choice (1): their O and Q
// fragments alone need more. At 64/64 uncapped the kernels came out at 131-173
// registers, 3 CTAs (12 warps) per SM, and the selected forward issued on 31 %
// of cycles; 4 CTAs made every kernel faster then. Since, the selected dq's
// union walk grew to 148 bytes of spill at 128 registers (8.6 M local requests
// a launch, ncu), and at 3 CTAs (H200, m7c, BM_*Bwd, docs/performance.md) the
// selected backward ran 5 % faster at S = 2048 and 13 % at 64k while the
// selected forward lost 5 % and 16 % (it still spills at 168) and the window
// and compressed kernels moved within 3 %. The selected dk/dv also spends the
// 40 registers more on holding the warp's K and V fragments for the whole
// kernel (attention_bwd_dkdv_tc.cu) instead of re-reading them at every row
// step; the window's dk/dv did the same 12 % slower at S = 2048 (against its
// 4-CTA time on another H200). So: the selected backward (dq, dk/dv) at 3,
// everything else at 4.
// The dk/dv kernels that also make dq (BackwardDq::atomic) hold its 16 x 64
// accumulators beside dK and dV: 3 for every branch.
template <TcFamily F, Branch BR, int DK, int DV>
constexpr int min_ctas_per_sm() {
  if (DK + DV > 128) return 1;
  if (F == TcFamily::DkdvDq) return 3;
  return F != TcFamily::Forward && BR == Branch::Selected ? 3 : 4;
}

// v2: one body templated on (T, DK, DV, branch), e.g.
// NSA_TC_BRANCH_KERNELS(fwd, tc_fwd_rows_body, TcFamily::Forward): each kernel's
// __launch_bounds__ asks for min_ctas_per_sm<FAMILY, its branch, DK, DV>().
#define NSA_TC_BRANCH_KERNELS(STEM, BODY, FAMILY) NSA_TC_BRANCH_KERNELS_AS(STEM, tc, BODY, FAMILY)
// The same with another version tag in the names: nsa_window_STEM_TAG_kernel, ...
// and STEM_TAG_kernels() (v3's wgmma forward: NSA_TC_BRANCH_KERNELS_AS(fwd, wg, ...)).
#define NSA_TC_BRANCH_KERNELS_AS(STEM, TAG, BODY, FAMILY)                                                       \
  template <typename T, int DK, int DV>                                                                         \
  __global__ void __launch_bounds__(tc::kTcThreads, (min_ctas_per_sm<FAMILY, Branch::Window, DK, DV>()))        \
      nsa_window_##STEM##_##TAG##_kernel(AttnParams p) {                                                        \
    BODY<T, DK, DV, Branch::Window>(p);                                                                         \
  }                                                                                                             \
  template <typename T, int DK, int DV>                                                                         \
  __global__ void __launch_bounds__(tc::kTcThreads, (min_ctas_per_sm<FAMILY, Branch::Compressed, DK, DV>()))    \
      nsa_compressed_##STEM##_##TAG##_kernel(AttnParams p) {                                                    \
    BODY<T, DK, DV, Branch::Compressed>(p);                                                                     \
  }                                                                                                             \
  template <typename T, int DK, int DV>                                                                         \
  __global__ void __launch_bounds__(tc::kTcThreads, (min_ctas_per_sm<FAMILY, Branch::Selected, DK, DV>()))      \
      nsa_selected_##STEM##_##TAG##_kernel(AttnParams p) {                                                      \
    BODY<T, DK, DV, Branch::Selected>(p);                                                                       \
  }                                                                                                             \
  template <typename T, int DK, int DV>                                                                         \
  BranchKernels<void (*)(AttnParams)> STEM##_##TAG##_kernels() {                                                \
    return {nsa_window_##STEM##_##TAG##_kernel<T, DK, DV>, nsa_compressed_##STEM##_##TAG##_kernel<T, DK, DV>,   \
            nsa_selected_##STEM##_##TAG##_kernel<T, DK, DV>};                                                   \
  }

// The (dk, dv) pairs every v2 kernel instantiates (forward, dq, dk/dv); other
// head dims run v1 (a tiling choice: the result is the same function).
#define NSA_TC_DIMS(X) \
  X(64, 64) X(64, 128) X(64, 192) X(128, 64) X(128, 128) X(128, 192) X(192, 64) X(192, 128) X(192, 192)

inline bool all_aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  return true;
}

// v2's front door, the same for the forward, dq and dk/dv launchers. It
// declines (returns false, launches nothing: the caller runs v1) when v1 is
// forced (set_force_v1_kernels), for fp32, when a tensor in `tensors` is not
// 16-byte aligned (cp.async moves 16-byte rows; dims are multiples of 64, so
// an aligned tensor has aligned rows) or for head dims v2 does not tile; else
// it runs `Launch::template run<T, DK, DV>(br, p)`, which may still decline
// (shared memory). `last` records the version that ran, 2 or 1, for the
// routing probe.
template <typename Launch>
bool launch_v2_or_decline(Branch br, at::ScalarType dtype, AttnParams& p, std::initializer_list<const void*> tensors,
                          std::atomic<int>& last) {
  const auto dims = [&](auto tag) -> bool {
    using T = decltype(tag);
    switch (p.dk * 1000 + p.dv) {
#define NSA_TC_CASE(DK, DV) \
  case DK * 1000 + DV:      \
    return Launch::template run<T, DK, DV>(br, p);
      NSA_TC_DIMS(NSA_TC_CASE)
#undef NSA_TC_CASE
      default:
        return false;
    }
  };
  bool launched = false;
  if (!force_v1_kernels() && all_aligned16(tensors)) {
    if (dtype == at::kBFloat16)
      launched = dims(c10::BFloat16{});
    else if (dtype == at::kHalf)
      launched = dims(c10::Half{});
  }
  last.store(launched ? 2 : 1);
  return launched;
}

}  // namespace nsa::cuda
