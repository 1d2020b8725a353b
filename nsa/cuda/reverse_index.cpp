// The reverse index's ATen way and the choice between the two (reverse_index.h).
#include "nsa/cuda/reverse_index.h"

#include <ATen/ATen.h>

namespace nsa::cuda {

// Every valid (b, t, g, slot) entry gets key (b*G + g)*n_blocks + j; a stable
// sort by key lists, per key, the queries t that chose block j in ascending t;
// offsets come from a binary search of the sorted keys. Invalid entries sort
// to a sentinel key past the last.
ReverseIndex reverse_index_by_sort(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks) {
  const int64_t B = block_idx.size(0), S = block_idx.size(1), G = block_idx.size(2);
  const auto opts = block_idx.options().dtype(at::kLong);
  const at::Tensor j = block_idx.to(at::kLong);
  const at::Tensor b = at::arange(B, opts).view({B, 1, 1, 1});
  const at::Tensor t = at::arange(S, opts).view({1, S, 1, 1});
  const at::Tensor g = at::arange(G, opts).view({1, 1, G, 1});
  const int64_t n_keys = B * G * n_blocks;
  const at::Tensor valid = (j >= 0) & (j < n_blocks) & (j * sel_block <= t);
  const at::Tensor key = at::where(valid, (b * G + g) * n_blocks + j, at::full({}, n_keys, opts)).flatten();
  auto [sorted_key, perm] = at::sort(key, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor t_flat = t.expand_as(j).flatten();
  ReverseIndex r;
  r.query = t_flat.index_select(0, perm).to(at::kInt).contiguous();
  const int64_t n = block_idx.size(3);
  const at::Tensor slot_flat = at::arange(n, opts).view({1, 1, 1, n}).expand_as(j).flatten();
  r.slot = slot_flat.index_select(0, perm).to(at::kInt).contiguous();
  r.offset = at::searchsorted(sorted_key, at::arange(n_keys + 1, opts)).contiguous();
  return r;
}

ReverseIndex reverse_index(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks) {
  if (reverse_index_kernels_apply(block_idx, n_blocks)) return reverse_index_by_kernels(block_idx, sel_block, n_blocks);
  return reverse_index_by_sort(block_idx, sel_block, n_blocks);
}

}  // namespace nsa::cuda
