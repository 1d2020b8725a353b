// Host-side launch glue every attention launcher shares (v1 and v2; forward,
// dq, dk/dv): pick the branch's kernel among its three names, raise its
// dynamic shared-memory limit, launch on the current stream, check the launch;
// and v2's query tiling, which the forward and dq kernels share. Nothing here
// runs on the device: the kernels' arithmetic is untouched by it.
#pragma once

#include <cstddef>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/cuda_check.h"

namespace nsa::cuda {

// The kernel of branch `br`: each branch has its own name so a kernel trace
// tells them apart (kernel_registry.cpp).
template <typename Kernel>
Kernel branch_kernel(Branch br, Kernel window, Kernel compressed, Kernel selected) {
  return br == Branch::Window ? window : br == Branch::Compressed ? compressed : selected;
}

// `smem` bytes may exceed the 48 KB default, so the limit is raised per kernel first.
template <typename Kernel>
void launch_kernel(Kernel kernel, dim3 grid, int threads, size_t smem, const AttnParams& p) {
  NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<grid, threads, smem, at::cuda::getCurrentCUDAStream()>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// v2 query tiling (tc kernels): Selected takes the heads of one query per CTA
// (`rows_sel` rows); Window / Compressed take `rows_win` rows of queries × heads,
// whole head groups of several queries when a group has fewer heads than that.
// Sets q_tile, head_chunk and rows; returns the grid.
inline dim3 tc_query_grid(Branch br, AttnParams& p, int rows_win, int rows_sel) {
  if (br == Branch::Selected) {
    p.q_tile = 1;
    p.head_chunk = imin(p.h, rows_sel);
    p.rows = rows_sel;
    return dim3(p.S, p.B * p.G * ceil_div(p.h, p.head_chunk));
  }
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

// A v2 launcher for the kernels tiled by queries (forward, dq): `Layout` gives
// the shared memory of Selected (for n_sel blocks) and of the others. False
// when Selected would need more than the budget (an enormous n: v1 handles it).
template <typename Layout, typename Kernel>
bool launch_tc_query_kernel(Branch br, AttnParams& p, int threads, int rows_win, int rows_sel, Kernel window,
                            Kernel compressed, Kernel selected) {
  const size_t smem = br == Branch::Selected ? Layout::selected_bytes(p.n_sel) : Layout::kKvBytes;
  if (br == Branch::Selected && smem > kSmemBudget) return false;
  const dim3 grid = tc_query_grid(br, p, rows_win, rows_sel);
  launch_kernel(branch_kernel(br, window, compressed, selected), grid, threads, smem, p);
  return true;
}

}  // namespace nsa::cuda
