#pragma once
// The comparison behind the causality probe: where to cut a sequence, how to
// build one batch that perturbs everything after each cut, and which layer
// outputs moved at positions they must not depend on. Pure functions, so tests
// can hand in a deliberately leaky model.
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "nsa/config.h"

namespace harness {

// Cut points t (tokens after t are replaced; positions ≤ t must not move) for a
// sequence of S: the first position, the last that still has a future (S−2), the
// window edge (w−1, w, w+1), both sides of the compressed-block ends and of the
// selection-block boundaries nearest the middle, and `random_count` seeded others.
// Where a path is off by one at a boundary, only the cut right there sees it.
// Ascending, unique, each in [0, S−2].
std::vector<int64_t> causality_cut_points(int64_t S, const nsa::NsaParams& p, uint64_t seed, int random_count = 3);

// Row 0: `tokens` [S] as given; row c+1: the same with every token after cuts[c]
// replaced by a different one (each replaced token changes). → [cuts+1, S].
at::Tensor perturbed_batch(const at::Tensor& tokens, const std::vector<int64_t>& cuts, int64_t vocab, uint64_t seed);

struct CausalLeak {
  int64_t cut = 0;            // tokens after this position were replaced
  int64_t first_changed = 0;  // the earliest position ≤ cut whose output moved
  int layer = 0;              // the first layer where it moved
  double change = 0;          // the largest change at positions ≤ cut, relative to the layer's output scale
};

// `layers`: each layer's output for the perturbed batch, [cuts+1, S, D] (row 0
// unperturbed). A leak for every cut where some layer moved by more than
// `rel_tol` of that layer's largest output anywhere at a position ≤ the cut.
std::vector<CausalLeak> find_leaks(const std::vector<at::Tensor>& layers, const std::vector<int64_t>& cuts,
                                   double rel_tol);

// Each layer's output for a batch of token rows [R, S] → [R, S, D] each.
using LayerForward = std::function<std::vector<at::Tensor>(const at::Tensor& rows)>;

// find_leaks over `batch` (perturbed_batch's [cuts+1, S]) run in forwards of
// row 0 and at most `cuts_per_forward` cut rows each, so every comparison is
// still between rows of one forward (computed by the same operations). The
// same leaks as one forward of the whole batch, in cut order.
std::vector<CausalLeak> find_leaks_in_forwards(const at::Tensor& batch, const std::vector<int64_t>& cuts,
                                               int64_t cuts_per_forward, double rel_tol, const LayerForward& forward);

// How many cut rows one forward may take. The CPU prefill paths hold a float64
// S×S score matrix per (row, head) at once: S 4096, 4 heads, 14 rows took
// 8.2 GB (peak RSS, the tiny config); one forward of every row at S 8192 would
// take 32 GB. On the CPU the rows are bounded by `cpu_bytes` (at least one
// cut row a forward); the CUDA kernels keep no S×S tensor: every cut at once.
constexpr int64_t kCausalityCpuBytes = int64_t(2) << 30;
int64_t causality_cuts_per_forward(int64_t S, int64_t heads, bool on_cuda, int64_t n_cuts,
                                   int64_t cpu_bytes = kCausalityCpuBytes);

}  // namespace harness
