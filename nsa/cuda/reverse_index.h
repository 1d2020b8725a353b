#pragma once
// The selected branch's reverse index: for every key (b, g, block j), the
// queries t that chose block j — ascending t, a query once per slot that names
// it — so that the dk/dv kernel's CTA owning block j streams exactly those
// rows. Entries that choose nothing count nowhere: -1, a block out of range,
// or a block that starts after t (it sees no key). Each entry also keeps the
// slot s of block_idx[b, t, g, s] it came from, so that a kernel walking a
// key's list can write a per-(query, slot) result without searching the row.
#include <ATen/core/Tensor.h>

namespace nsa::cuda {

struct ReverseIndex {
  at::Tensor query;   // int32; key k's queries are query[offset[k] .. offset[k+1])
  at::Tensor slot;    // int32, beside query: the entry's slot in its query's block_idx row
  at::Tensor offset;  // int64 [B·G·n_blocks + 1], key k = (b·G + g)·n_blocks + j
};

// block_idx: int32 [B,S,G,n] on the GPU. Counting-sort kernels where they
// apply (reverse_index.cu), else a stable sort in ATen; both give the same
// tensors (query past offset[B·G·n_blocks] is unspecified). No host sync.
ReverseIndex reverse_index(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks);

// The two ways, for tests and benchmarks.
constexpr int64_t kReverseIndexMaxBlocks = 6144;  // the fill kernel's 8-byte slot per block in 48 KB of shared memory
bool reverse_index_kernels_apply(const at::Tensor& block_idx, int64_t n_blocks);  // n ≤ 32, n_blocks ≤ the max
ReverseIndex reverse_index_by_kernels(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks);
ReverseIndex reverse_index_by_sort(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks);

}  // namespace nsa::cuda
