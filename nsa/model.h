#pragma once
// The language model: byte embedding, Llama-style pre-norm blocks
// (x += NSA(RMSNorm(x)); x += SwiGLU(RMSNorm(x))), final RMSNorm, untied head.
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "nsa/dense_attention.h"
#include "nsa/nsa_layer.h"

namespace nsa {

struct BlockWeights {
  at::Tensor norm1, norm2;  // [D]
  NsaWeights attn;     // attention "nsa"
  DenseWeights dense;  // attention "dense" (the other one stays undefined)
  at::Tensor w_gate, w_up, w_down;  // SwiGLU: [D,F], [D,F], [F,D]
};

class Model {
 public:
  // Parameters created on `opts` (device + param dtype), seeded by the caller's generator state.
  Model(ModelConfig cfg, const at::TensorOptions& opts);

  // tokens [B,S] int64 → logits [B,S,vocab] in `compute` dtype.
  at::Tensor forward(const at::Tensor& tokens, at::ScalarType compute, const Runtime& rt);
  // Mean next-token cross-entropy (fp32) for tokens [B,S+1].
  at::Tensor loss(const at::Tensor& batch, at::ScalarType compute, const Runtime& rt);

  // Every parameter with a stable name ("layers.0.attn.wk.slc", "embed", …).
  const std::vector<std::pair<std::string, at::Tensor>>& parameters() const { return params_; }
  const ModelConfig& config() const { return cfg_; }
  // The NSA layer's weights; only for attention "nsa" (throws for a dense model).
  const NsaWeights& attention_weights(int layer) const;
  bool is_dense() const { return cfg_.attention == "dense"; }

 private:
  ModelConfig cfg_;
  at::Tensor embed_, final_norm_, head_;
  std::vector<BlockWeights> blocks_;
  std::vector<std::pair<std::string, at::Tensor>> params_;
};

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace nsa
