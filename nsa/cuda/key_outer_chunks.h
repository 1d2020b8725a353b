#pragma once
// How the selected KeyOuter kernels (selected_key_outer.cu) cut the sequence
// into chunks of queries: a chunk's partials (`per_query` bytes a query) are
// all in memory at once, between its ko kernel and its merge.
#include <algorithm>
#include <cstdint>

namespace nsa::cuda {

// Queries a chunk: `forced` where it is > 0 (set_selected_key_outer_chunk),
// else the fewest chunks whose partials fit `budget` bytes (at least one query
// a chunk), all of one length but the last, which is no longer than the others.
// Why equal: filled to the budget, paper_kernel at 8k ran 4,032 + 4,032 + 128
// queries, and the short last chunk's three launches took ~0.1 ms (ncu, H200:
// its ko kernel 0.069 ms for 128 queries on a grid sized for a full chunk).
inline int64_t key_outer_chunk_queries(int64_t S, int64_t per_query, int64_t budget, int64_t forced) {
  const int64_t most =
      std::clamp<int64_t>(forced > 0 ? forced : budget / std::max<int64_t>(per_query, 1), 1, std::max<int64_t>(S, 1));
  if (forced > 0 || S <= most) return most;  // `most` is within [1, max(S, 1)]: one chunk, never 0 queries
  const int64_t chunks = (S + most - 1) / most;
  return (S + chunks - 1) / chunks;
}

}  // namespace nsa::cuda
