// The MLP's activation, SwiGLU, as one CUDA kernel each way (swiglu.cu):
//
//   forward   out[r, i]    = silu(gu[r, i]) · gu[r, F + i]            silu(g) = g·σ(g)
//   backward  dgu[r, i]    = dout[r, i] · gu[r, F + i] · σ(g)·(1 + g·(1 − σ(g)))
//             dgu[r, F+i]  = dout[r, i] · silu(g)
//
// gu [..., 2F] is one GEMM's output, x·[W_gate | W_up]: the gate in the first F
// columns, the up projection in the last F. Products in float32 (float64 for
// float64), each output rounded once to gu's dtype.
#pragma once

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// Autograd function: gu [..., 2F] (float32, float16, bfloat16 or float64, any
// strides: made contiguous) → out [..., F] in gu's dtype. Backward gives dgu in
// gu's dtype. This is what register_with_layer() plugs into the model's MLP
// (nsa::register_swiglu).
at::Tensor swiglu(const at::Tensor& gu);

// ---- the launchers without autograd (gu and dout contiguous) -----------------
at::Tensor swiglu_forward(const at::Tensor& gu);
at::Tensor swiglu_backward(const at::Tensor& dout, const at::Tensor& gu);

}  // namespace nsa::cuda
