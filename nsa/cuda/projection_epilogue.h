// The projection's epilogue on the GPU: y [B,S,width] of one projection GEMM →
// q, k_0 … k_{n-1}, v_0 … v_{n-1}, each a contiguous [B,S,heads,dim], q and the
// flagged keys rotated (RoPE, rotate-half form) — one kernel forward, one
// backward. Layout and flags: nsa::ProjectionSplit (nsa_ops.h); the ATen ops of
// nsa::split_projection are the reference it replaces on CUDA tensors.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nsa/nsa_ops.h"

namespace nsa::cuda {

// The autograd function: outputs {q, k_0 … k_{n-1}, v_0 … v_{n-1}} and
// s.q_copies - 1 more handles of q (the same storage); backward takes their
// gradients (an undefined one counts as zero; those of q's handles summed) and
// writes dy in one kernel. `rope_pos0` is the position of y's first token as RoPE sees it.
// y: CUDA, float32 / float16 / bfloat16, d_k even.
std::vector<at::Tensor> projection_epilogue(const at::Tensor& y, const ProjectionSplit& s, int64_t rope_pos0);

// The hook nsa::split_projection calls (register_projection_epilogue): the
// function above, or {} for a dtype the kernel does not take (float64).
std::vector<at::Tensor> projection_epilogue_hook(const at::Tensor& y, const ProjectionSplit& s, int64_t rope_pos0);

// ---- without autograd: the launchers the function, tests and benchmarks share --
std::vector<at::Tensor> projection_epilogue_forward(const at::Tensor& y, const ProjectionSplit& s,
                                                    int64_t rope_pos0);
// grads: one per output of the autograd function, in its order (q's extra
// handles last, summed into q's gradient); undefined = zero. B, S: y's.
at::Tensor projection_epilogue_backward(const std::vector<at::Tensor>& grads, const ProjectionSplit& s,
                                        int64_t rope_pos0, int64_t B, int64_t S, at::ScalarType dtype);

// Testing hook: kernels launched so far (forward and backward), so a test can
// tell the fused kernel ran rather than the ATen fallback.
int64_t projection_epilogue_launches();

}  // namespace nsa::cuda
