// The NSA gate combine o = Σ_c g_c ⊙ o_c (DESIGN.md §2, the layer's output
// before W_O) as one CUDA kernel forward and one backward (gate_combine.cu).
//
// Shapes: o[c] [B,S,H,dv] (float32, float16, bfloat16 or float64, one dtype);
// gates [B,S,H,3] with any strides (the layer passes the transpose of
// [B,S,3,H]); cols[c] is the gate column that weights o[c], a permutation of
// {0,1,2}. Sums run in float32 (float64 for float64).
#pragma once

#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// nsa::GateColumns (nsa_ops.h), spelled out so that nvcc never parses the
// layer's headers: cols[c] is the gate column that weights o[c].
using GateColumns = std::array<int64_t, 3>;

// Autograd function: out [B,S,H,dv] in o's dtype. Backward gives d o[c] in o's
// dtype and d gates in the gates' compute dtype (float32; float64 for float64),
// each only where its input requires grad. Gates of another dtype are converted
// first; o[c] is made contiguous. The gates are saved as given, so an in-place
// change of them before backward is caught by autograd. This is the function
// register_with_layer() plugs into combine_branches (nsa::register_gate_combine).
at::Tensor gate_combine(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols);

// ---- the launchers without autograd (checked inputs: o[c] contiguous, gates in
// the compute dtype) ----------------------------------------------------------
at::Tensor gate_combine_forward(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols);

struct GateCombineGrads {
  at::Tensor d_o[3];    // [B,S,H,dv], o's dtype; undefined where not wanted
  at::Tensor dg;        // [B,S,H,3] contiguous, the gates' dtype; undefined where not wanted
  at::Tensor delta[3];  // [B,S,H] float32: rowsum(d_o[c] ⊙ o[c]) (want_delta, d_o[c] wanted, o not float64)
};
// dout [B,S,H,dv] contiguous in o's dtype. want_delta: also each wanted d_o[c]'s
// rowsum(d_o[c] ⊙ o[c]) in fp32, the term its attention backward needs.
GateCombineGrads gate_combine_backward(const at::Tensor& dout, const at::Tensor (&o)[3], const at::Tensor& gates,
                                       const GateColumns& cols, const std::array<bool, 3>& want_d_o, bool want_dg,
                                       bool want_delta = false);

}  // namespace nsa::cuda
