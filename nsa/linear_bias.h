// y = x·w + b over x's last dimension (x [..., K], w [K, N], b [N]) with its
// own backward. What it replaces, `at::matmul(x, w) + b`, costs two things a
// training step pays per bias (m7c_125m: six per layer, φ's two for keys and
// for values and the gate's two): a separate broadcast add after the GEMM, and
// in backward the bias gradient as ATen's sum over every leading dimension,
// which for φ's 2,032 × N gradients ran as a reduction of one CTA (~25 µs
// each, 1.7 ms of a 57 ms step on an H100). Here the 16-bit forward is one
// addmm (the bias joins cuBLAS's epilogue; fp32/fp64 keep the GEMM and an add,
// linear_bias.cpp says why) and db = 1ᵀ·dy is a [1, M]·[M, N] GEMM. Same
// function on every device and dtype; gradients only for the inputs that
// require them.
#pragma once

#include <ATen/core/Tensor.h>

namespace nsa {

at::Tensor linear_bias(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

// E independent maps at once: y[e] = x[e]·w[e] + b[e] (x [E, M, K], w [E, K, N],
// b [E, N] → [E, M, N]), one batched GEMM each way where E calls of
// linear_bias take E (φ of keys and of values, compress_sequence_pair). The
// same forms as linear_bias: 16-bit adds the bias inside the GEMM, fp32/fp64
// after it; db[e] = 1ᵀ·dy[e].
at::Tensor linear_bias_each(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

// May a computation in dtype t take a faster form that sums in another order?
// 16-bit (the training step): yes. fp32 and fp64 are the parity runs: the
// sequential prefill is compared with the ATen decode step at 1e-5, so their
// rows must come out the same whether one block or the whole sequence is
// computed at once. The one predicate for every such choice (linear_bias's
// bias epilogue, compress_sequence's chunked φ).
inline bool may_reorder_sums(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

}  // namespace nsa
