// The attention backward's delta = rowsum(dO ⊙ O) (fp32 [B,S,H]), handed over
// from the kernel that made dO. The layer's gate combine backward writes each
// branch's gradient d o_c and has o_c in registers at the same time, so it sums
// their product there (gate_combine.h); attention_backward would otherwise
// read both again (row_dot.cu), one pass over [B,S,H,dv] per branch.
//
// The hand-over is keyed by the tensors themselves, not by call order: an
// offer says "delta is rowsum(dout ⊙ o) for this dout and this o", and
// attention_backward takes it only when it is called with that very dout
// (same tensor, not written since: autograd may have summed another gradient
// into it in place, which bumps its version) and that very o (same storage and
// version). Anything else — a branch routed elsewhere, a gradient summed from
// two uses, a test calling the launcher directly — finds no offer and computes
// its own delta. Offers live in a small ring (the last few per process), hold
// only the delta itself (weak references to dout and o), and go when taken.
#pragma once

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// delta [B,S,H] float32 contiguous = rowsum(dout ⊙ o) over the last dim.
void offer_row_delta(const at::Tensor& dout, const at::Tensor& o, const at::Tensor& delta);
// The offer for exactly this dout and o, removed from the ring; undefined if none.
at::Tensor take_row_delta(const at::Tensor& dout, const at::Tensor& o);
// Offers taken since the process started (tests: the layer's branches do take them).
int64_t row_deltas_taken();

}  // namespace nsa::cuda
