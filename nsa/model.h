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
  at::Tensor w_gate_up;  // optional, not a parameter: w_gate | w_up as one [D,2F] tensor (as NsaWeights::w_proj)
};

// Every tensor the forward reads.
struct ModelWeights {
  at::Tensor embed, final_norm, head;
  std::vector<BlockWeights> blocks;
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

  // Compute-dtype copies of the weights. With fp32 master weights the forward
  // casts every weight but the norms' to the 16-bit compute dtype (~20 casts
  // per layer) and backward casts each gradient back: ~465 small kernels a
  // step. With copies kept, a forward in `dtype` reads 16-bit leaves instead:
  // one copy refreshes them from the parameters as it starts (so a parameter
  // changed anywhere is seen) and gather_copy_grads() moves their gradients
  // into the parameters' in one more (one kernel each where register_copy_spans
  // gave one, else a copy_ per weight). The weights the forward concatenates
  // (the projection's seven, the dense cell's three, the MLP's gate | up) share
  // one leaf per group, which the forward reads whole (w_proj, w_qkv,
  // w_gate_up): no cat forward, and one gradient backward instead of a column
  // slice per weight that autograd would copy into each weight's own leaf.
  // A path that reads one of those weights alone casts its fp32 parameter as
  // without copies. The values are the same either
  // way as long as each weight is read once per forward (the batched prefill):
  // the cast's backward rounded nothing, and where one cast fed two uses
  // autograd summed them in 16 bits before it too. Norm weights stay fp32 (the
  // norm kernels read them so). Only for a 16-bit dtype with fp32 parameters.
  // The refresh is in place (a captured step must replay it): a second forward
  // before the first one's backward makes that backward fail loudly (autograd:
  // "modified by an inplace operation"); the Trainer never does that.
  void keep_compute_copies(at::ScalarType dtype);
  bool keeps_compute_copies() const { return !pairs_.empty(); }
  int compute_copy_count() const { return static_cast<int>(pairs_.size()); }
  // Before backward: the copies' gradients undefined, so that autograd hands
  // each its gradient tensor instead of adding into a zeroed one.
  void drop_copy_grads();
  // After backward: each parameter's gradient = its copy's (allocated where
  // undefined; parameters whose copy got none keep theirs).
  void gather_copy_grads();

 private:
  const ModelWeights& weights_for(at::ScalarType compute);

  ModelConfig cfg_;
  ModelWeights w_;       // the parameters
  ModelWeights copy_w_;  // w_ with the copies in place of the cast weights
  struct CopyPair {
    at::Tensor master;  // the fp32 parameter
    at::Tensor copy;    // where its 16-bit copy lives: its leaf, or a column slice of its group's (detached)
    size_t leaf;        // leaves_[leaf] holds it
    int64_t col0;       // its first column there; -1: the whole leaf
  };
  std::vector<CopyPair> pairs_;
  std::vector<at::Tensor> leaves_;  // what autograd fills: lone copies and the groups' tensors
  std::vector<std::pair<std::string, at::Tensor>> params_;
};

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// The residual add and the RMSNorm after it: {s = x + delta, rms_norm(s, weight)}.
// With a fused kernel registered, on CUDA tensors and NSA_FUSED_NORM on: one
// kernel each way, whose backward also sums the two gradients the residual
// stream receives (route "norm" = "cuda.add_rms_norm"); else ATen ("aten").
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                               double eps, const Runtime& rt);
// Hook for that kernel (set by nsa_cuda when compiled in); returns undefined
// tensors to decline (the ATen ops run).
using AddRmsNormFn = std::pair<at::Tensor, at::Tensor> (*)(const at::Tensor& x, const at::Tensor& delta,
                                                           const at::Tensor& weight, double eps);
void register_add_rms_norm(AddRmsNormFn fn);

// The block's MLP, SwiGLU: (silu(h·W_gate) ⊙ (h·W_up))·W_down in `compute`. With
// a fused activation registered, on CUDA tensors and NSA_FUSED_MLP on: the gate
// and up projections as one GEMM h·[W_gate | W_up] and the activation in one
// kernel each way (route "mlp" = "cuda.swiglu"); else the ATen ops ("aten").
at::Tensor swiglu_mlp(const at::Tensor& h, const BlockWeights& b, at::ScalarType compute, const Runtime& rt);

// Hook for that activation (set by nsa_cuda when compiled in, so that this
// library needs no CUDA): gu [..., 2F] (gate | up) → silu(gate)·up [..., F],
// autograd included.
using SwigluFn = at::Tensor (*)(const at::Tensor& gu);
void register_swiglu(SwigluFn fn);

// Hook for copying pairs of 1-D/2-D tensors (column slices too) with a dtype
// conversion in one kernel (set by nsa_cuda when compiled in: copy_spans,
// nsa/cuda/weight_copy.h); the 16-bit weight copies use it on CUDA tensors.
using CopySpansFn = void (*)(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src);
void register_copy_spans(CopySpansFn fn);

}  // namespace nsa
