#pragma once
// One layer's NSA attention parameters (DESIGN.md §2): a query projection, a
// separate K/V projection per branch, the compression MLPs φ_K/φ_V with their
// intra-block position embeddings, the gate MLP and the output projection.
#include <ATen/core/Tensor.h>  // not ATen.h: nvcc reads this too (projection_epilogue.cu; nsa/cuda/nsa_cuda.h)

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nsa/config.h"

namespace nsa {

struct PhiWeights {  // φ: flatten(block + pe) → Linear(l·dim → dim) → SiLU → Linear(dim → dim)
  at::Tensor pe;      // [l, dim]
  at::Tensor w1, b1;  // [l·dim, dim], [dim]
  at::Tensor w2, b2;  // [dim, dim], [dim]
};

struct NsaWeights {
  at::Tensor wq;                 // [D, H·dk]
  at::Tensor wk[3], wv[3];       // per branch (cmp, slc, win): [D, G·dk], [D, G·dv]
  PhiWeights phi_k, phi_v;       // unused (undefined) when phi == "mean"
  at::Tensor gate_w1, gate_b1;   // [D, Dg], [Dg]
  at::Tensor gate_w2, gate_b2;   // [Dg, 3H], [3H]  (column c·H + h is branch c of head h)
  at::Tensor wo;                 // [H·dv, D]
  // Optional, not a parameter: wq | wk[0..2] | wv[0..2] as one [D, ·] tensor
  // (the model's 16-bit copies keep them so; nsa/model.h). The projection
  // reads it where defined instead of concatenating the seven.
  at::Tensor w_proj;

  // Every parameter with a stable dotted name ("wk.slc", "phi_k.w1", …), in
  // one fixed order; the φ weights only when defined (phi == "mlp").
  void for_each(const std::function<void(const std::string& name, at::Tensor& t)>& fn);
  std::vector<std::pair<std::string, at::Tensor>> named() const;
  // A detached copy on `device` in `dtype` (leaves: requires_grad as asked).
  NsaWeights to(at::Device device, at::ScalarType dtype, bool requires_grad = false) const;
};

// Random init (normal, std 0.02; biases 0; gate fc2 N(0, 0.02) — never all-zero
// unless the zero_gate_init fault is on). Parameters require grad.
NsaWeights init_nsa_weights(const ModelConfig& c, const at::TensorOptions& opts);

}  // namespace nsa
