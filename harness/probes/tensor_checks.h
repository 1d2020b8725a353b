#pragma once
// Checks over many tensors at once, decided on the tensors' device with a
// single host sync: the probes run them every step, so a clean step must cost
// a few kernel launches, not one round trip per tensor or per row.
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness {

// True when every tensor is 4-d with the sizes of the first (so the per-layer
// tensors of the tap can be stacked and checked at once).
bool same_4d_shapes(const std::vector<at::Tensor>& tensors);

// True when every element of every tensor is finite. Floating-point tensors of
// any dtype and device; an empty list is finite.
bool all_finite_together(const std::vector<at::Tensor>& tensors);

// The NSA selection invariants (DESIGN.md §2) for one query's row of selected
// block indices (-1 = empty slot): in range and causal (j·l' ≤ t), no
// duplicates, min(n, ⌊t/l'⌋+1) blocks, block 0 and the two local blocks
// present. Returns what is wrong, or nothing. The plain per-row statement.
std::optional<std::string> selection_row_violation(const std::vector<int64_t>& row, int64_t t, int64_t sel_block,
                                                   int64_t sel_count);

// The same invariants for a whole block_idx tensor [B,S,G,n] (query t = its
// index along S), vectorised: a bool tensor [B,S,G], true where the row breaks one.
at::Tensor selection_violations(const at::Tensor& block_idx, int64_t sel_block, int64_t sel_count);

}  // namespace harness
