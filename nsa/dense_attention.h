#pragma once
// Dense causal attention with the NSA layer's shapes: the yardstick a sparse
// layer is measured against (`model: {attention: dense}`). Same query/key/value
// widths (H heads in G groups, dk, dv), same RoPE, one K/V projection instead of
// three branches, no gate: what a GPT of the same size would train, through
// libtorch's fastest scaled-dot-product attention on the device (cuDNN or
// FlashAttention on a GPU), so NSA ÷ dense is measured in one binary.
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nsa/config.h"

namespace nsa {

struct DenseWeights {
  at::Tensor wq;  // [D, H·dk]
  at::Tensor wk;  // [D, G·dk]
  at::Tensor wv;  // [D, G·dv]
  at::Tensor wo;  // [H·dv, D]
  at::Tensor w_qkv;  // optional, not a parameter: wq | wk | wv as one tensor (as NsaWeights::w_proj)
  // Every parameter by name, in one fixed order (as NsaWeights::for_each).
  void for_each(const std::function<void(const std::string& name, at::Tensor& t)>& fn);
  std::vector<std::pair<std::string, at::Tensor>> named() const;
};

// Normal(0, 0.02) like the NSA projections; parameters require grad.
DenseWeights init_dense_weights(const ModelConfig& c, const at::TensorOptions& opts);

// x [B,S,D] (compute dtype) → [B,S,D]: causal softmax(q·kᵀ/√dk)·v per head, each
// head reading its group's K/V, then W_O.
at::Tensor dense_attention(const DenseWeights& w, const at::Tensor& x, const ModelConfig& c);

}  // namespace nsa
