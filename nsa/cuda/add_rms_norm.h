// The residual add and the RMSNorm after it, as one CUDA kernel each way
// (add_rms_norm.cu). A row r is one position of [..., D]:
//
//   forward   s[r, :] = x[r, :] + delta[r, :]                  (rounded to x's dtype: the residual stream)
//             h[r, :] = s[r, :] · ρ_r · w                       ρ_r = (mean_i s[r, i]² + eps)^-1/2, fp32
//   backward  ds[r, :] = ds_out[r, :] + ρ_r (g − ŝ · mean_i g_i ŝ_i),   g = dh[r, :] · w,  ŝ = s[r, :] · ρ_r
//             dx = ddelta = ds;  dw = Σ_r dh[r, :] · ŝ                  (fp32, summed in a fixed order)
//
// ds_out is the gradient the residual stream s receives from further down
// (the next residual add); h's consumer (attention or the MLP) gives dh. Both
// arrive at one backward, so the sum autograd would otherwise form between
// them is part of the kernel.
#pragma once

#include <utility>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// Autograd function: x, delta [..., D] (float32, float16, bfloat16 or float64,
// one dtype; made contiguous), weight [D] (converted to float32, float64 for
// float64) → (s, h) in x's dtype. Backward gives dx = ddelta in x's dtype and
// dweight in weight's dtype. Returns undefined tensors (declines) where the
// kernel does not apply (add_rms_norm_declines says why: the backward's 4·D
// fp32 accumulators beyond one CTA's shared memory, D > ~14k on Hopper); then
// the caller's ATen ops run. This is what register_with_layer() plugs into the model
// (nsa::register_add_rms_norm).
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta,
                                               const at::Tensor& weight, double eps);
// Why add_rms_norm declines these inputs; empty when it takes them.
const char* add_rms_norm_declines(const at::Tensor& x);

// ---- the launchers without autograd (contiguous inputs, weight in the compute
// dtype) ------------------------------------------------------------------------
struct AddRmsNormOut {
  at::Tensor s, h, rstd;  // rstd [rows] float32 (float64 for float64)
};
AddRmsNormOut add_rms_norm_forward(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                   double eps);
struct AddRmsNormGrads {
  at::Tensor ds, dw;
};
// ds_out or dh may be undefined (no gradient reached that output: zero).
AddRmsNormGrads add_rms_norm_backward(const at::Tensor& ds_out, const at::Tensor& dh, const at::Tensor& s,
                                      const at::Tensor& weight, const at::Tensor& rstd);

}  // namespace nsa::cuda
