// Every weight into its 16-bit copy, and every copy's gradient back into its
// fp32 parameter, one kernel each way (weight_copy.cu).
//
// Why not ATen's multi-tensor copy: the model keeps the weights its forward
// concatenates (the projection's q | k | v of three branches, the MLP's gate |
// up) as one 16-bit tensor per group, so that the forward reads it without a
// cat and backward hands it one gradient instead of a slice per weight, which
// autograd would copy into each weight's own copy (nsa/model.h). Each weight's
// copy is then a column slice of its group's tensor — not dense, which ATen's
// multi-tensor copy takes only one launch per tensor for.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// dst[i] = src[i] for every i, converted to dst's dtype with the rounding of
// ATen's copy_ (round to nearest even; NaN stays NaN). Pairs of equal sizes,
// 1-D or 2-D, each with unit stride along its last dimension (a column slice of
// a wider tensor is fine); one dtype per list; all on one CUDA device; no dst
// overlapping another or a src. Few launches (one per kMaxSpans pairs) on the
// current stream; the spans ride in the kernel's parameters, so a captured
// CUDA graph replays the copy without reading host memory.
void copy_spans(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src);

}  // namespace nsa::cuda
