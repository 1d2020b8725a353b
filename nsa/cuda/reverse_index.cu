// The selected branch's reverse index (reverse_index.h) as a counting sort in
// three steps, deterministic and without a host sync:
//   1. count: one CTA per (chunk of T queries, b·G + g) counts, in shared
//      memory, how many of its chunk's entries chose each block j (integer
//      atomics: the count does not depend on their order);
//   2. ATen's cumsum over those counts laid out as [b·G+g][j][chunk] — the
//      order of the output itself — gives every (key, chunk) its first position;
//   3. fill: the same CTAs walk their chunk's rows in ascending t, one warp,
//      a row's slots in lanes, and write t (and the lane: the entry's slot
//      in the row) at the next free position of its key (lanes that chose
//      the same block in one row take consecutive positions in lane order, so
//      duplicates keep the stable order too).
// What it replaces (the ATen version kept in reverse_index_aten): a stable
// radix sort of every entry's key, an index_select and a searchsorted — about
// a dozen kernels a call, 0.97 ms of the m7c training step on an H100.
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdint>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/reverse_index.h"

namespace nsa::cuda {
namespace {

constexpr int kThreads = 128;

// block_idx [B,S,G,n]: the entry (b, t, g, s).
__device__ __forceinline__ const int* row_of(const int* block_idx, int b, int64_t t, int g, int64_t S, int G, int n) {
  return block_idx + ((int64_t(b) * S + t) * G + g) * n;
}

__global__ void nsa_reverse_index_count_kernel(const int* __restrict__ block_idx, int* __restrict__ counts, int64_t S,
                                               int G, int n, int64_t sel_block, int n_blocks, int rows_per_chunk) {
  extern __shared__ int hist[];  // [n_blocks]
  const int chunk = blockIdx.x, n_chunks = gridDim.x, bg = blockIdx.y, b = bg / G, g = bg % G;
  for (int j = threadIdx.x; j < n_blocks; j += blockDim.x) hist[j] = 0;
  __syncthreads();
  const int64_t t0 = int64_t(chunk) * rows_per_chunk;
  const int64_t rows = (S - t0 < rows_per_chunk ? S - t0 : int64_t(rows_per_chunk));
  for (int64_t e = threadIdx.x; e < rows * n; e += blockDim.x) {
    const int64_t t = t0 + e / n;
    const int j = row_of(block_idx, b, t, g, S, G, n)[e % n];
    if (block_chosen(j, t, sel_block, n_blocks)) atomicAdd(&hist[j], 1);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < n_blocks; j += blockDim.x)
    counts[(int64_t(bg) * n_blocks + j) * n_chunks + chunk] = hist[j];
}

// `inclusive` = cumsum of counts: (key, chunk)'s first position is inclusive − count.
__global__ void nsa_reverse_index_fill_kernel(const int* __restrict__ block_idx, const int* __restrict__ counts,
                                              const int64_t* __restrict__ inclusive, int* __restrict__ query,
                                              int* __restrict__ slot, int64_t* __restrict__ offset, int64_t S,
                                              int G, int n, int64_t sel_block, int n_blocks, int rows_per_chunk) {
  extern __shared__ int64_t next[];  // [n_blocks]: the next free position of each key, for this chunk
  const int chunk = blockIdx.x, n_chunks = gridDim.x, bg = blockIdx.y, b = bg / G, g = bg % G;
  for (int j = threadIdx.x; j < n_blocks; j += blockDim.x) {
    const int64_t at = (int64_t(bg) * n_blocks + j) * n_chunks + chunk;
    next[j] = inclusive[at] - counts[at];
    if (chunk == 0) offset[int64_t(bg) * n_blocks + j] = next[j];
  }
  if (chunk == 0 && bg == gridDim.y - 1 && threadIdx.x == 0) {
    const int64_t last = int64_t(gridDim.y) * n_blocks * n_chunks - 1;
    offset[int64_t(gridDim.y) * n_blocks] = inclusive[last];
  }
  __syncthreads();
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  const int64_t t0 = int64_t(chunk) * rows_per_chunk;
  const int64_t t1 = (t0 + rows_per_chunk < S ? t0 + rows_per_chunk : S);
  // The next row's entry is loaded while this row is written (a row is one
  // 64-byte line at n = 16): the walk is latency-bound, not bandwidth-bound.
  int j_next = lane < n && t0 < t1 ? row_of(block_idx, b, t0, g, S, G, n)[lane] : -1;
  for (int64_t t = t0; t < t1; ++t) {
    const int j = j_next;
    j_next = lane < n && t + 1 < t1 ? row_of(block_idx, b, t + 1, g, S, G, n)[lane] : -1;
    const bool valid = lane < n && block_chosen(j, t, sel_block, n_blocks);
    const unsigned voting = __ballot_sync(0xffffffffu, valid);
    const unsigned same = __match_any_sync(0xffffffffu, valid ? j : -1) & voting;
    if (valid) {
      const int rank = __popc(same & ((1u << lane) - 1u));
      query[next[j] + rank] = int(t);
      slot[next[j] + rank] = lane;
    }
    __syncwarp();
    if (valid && __ffs(same) - 1 == lane) next[j] += __popc(same);  // the lowest lane of the key
    __syncwarp();
  }
}

}  // namespace

bool reverse_index_kernels_apply(const at::Tensor& block_idx, int64_t n_blocks) {
  return block_idx.is_cuda() && block_idx.scalar_type() == at::kInt && block_idx.dim() == 4 &&
         block_idx.size(3) >= 1 && block_idx.size(3) <= 32 && n_blocks >= 1 && n_blocks <= kReverseIndexMaxBlocks &&
         block_idx.size(0) * block_idx.size(2) <= 65535;
}

ReverseIndex reverse_index_by_kernels(const at::Tensor& block_idx_in, int64_t sel_block, int64_t n_blocks) {
  TORCH_CHECK(reverse_index_kernels_apply(block_idx_in, n_blocks), "reverse_index_by_kernels: does not apply");
  const at::Tensor block_idx = block_idx_in.contiguous();
  const int64_t B = block_idx.size(0), S = block_idx.size(1), G = block_idx.size(2), n = block_idx.size(3);
  c10::cuda::CUDAGuard guard(block_idx.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // Short chunks keep the one-warp fill walk short; long sequences take longer
  // ones so the counts (B·G·n_blocks·chunks ints) stay small.
  const int rows_per_chunk = S <= 8192 ? 64 : 256;
  const int64_t n_chunks = (S + rows_per_chunk - 1) / rows_per_chunk;
  ReverseIndex r;
  r.query = at::empty({B * S * G * n}, block_idx.options());
  r.slot = at::empty({B * S * G * n}, block_idx.options());
  r.offset = at::empty({B * G * n_blocks + 1}, block_idx.options().dtype(at::kLong));
  if (S == 0) {
    r.offset.zero_();
    return r;
  }
  const at::Tensor counts = at::empty({B * G * n_blocks * n_chunks}, block_idx.options());
  const dim3 grid(unsigned(n_chunks), unsigned(B * G));
  nsa_reverse_index_count_kernel<<<grid, kThreads, size_t(n_blocks) * sizeof(int), stream>>>(
      block_idx.data_ptr<int>(), counts.data_ptr<int>(), S, int(G), int(n), sel_block, int(n_blocks), rows_per_chunk);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const at::Tensor inclusive = at::cumsum(counts, 0, at::kLong);
  nsa_reverse_index_fill_kernel<<<grid, kThreads, size_t(n_blocks) * sizeof(int64_t), stream>>>(
      block_idx.data_ptr<int>(), counts.data_ptr<int>(), inclusive.data_ptr<int64_t>(), r.query.data_ptr<int>(),
      r.slot.data_ptr<int>(), r.offset.data_ptr<int64_t>(), S, int(G), int(n), sel_block, int(n_blocks),
      rows_per_chunk);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return r;
}

}  // namespace nsa::cuda
