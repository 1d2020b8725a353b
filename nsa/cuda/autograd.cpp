// The three attention branches as autograd functions: forward saves the inputs,
// the output and the fp32 logsumexp; backward recomputes the probabilities from
// them (flash-style) through attention_backward. block_idx never gets a grad.
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/saved_spec.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Shared body: forward/backward given a spec; the spec's scalars ride in
// saved_data, its block_idx (if any) among the saved tensors.
at::Tensor forward_common(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                          const at::Tensor& v, const BranchSpec& spec) {
  ForwardResult r = attention_forward(q, k, v, spec);
  ctx->save_for_backward({q, k, v, r.o, spec.block_idx.defined() ? spec.block_idx : at::Tensor()});
  ctx->saved_data["lse"] = r.lse;
  save_spec_scalars(ctx, spec);
  return r.o;
}

Gradients backward_common(AutogradContext* ctx, const variable_list& grads) {
  const variable_list saved = ctx->get_saved_variables();
  BranchSpec spec = saved_spec_scalars(ctx);
  spec.block_idx = saved[4];
  const at::Tensor lse = ctx->saved_data["lse"].toTensor();
  if (!grads[0].defined()) return {};  // output unused: no gradient anywhere
  return attention_backward(saved[0], saved[1], saved[2], saved[3], lse, grads[0], spec);
}

struct WindowFn : torch::autograd::Function<WindowFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, int64_t window, double scale, int64_t dq) {
    BranchSpec spec;
    spec.branch = Branch::Window, spec.window = window, spec.scale = scale, spec.dq = BackwardDq(dq);
    return forward_common(ctx, q, k, v, spec);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Gradients g = backward_common(ctx, grads);
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Returns {o, lse}: select_blocks reads the logsumexp of the same scores; it
// has no gradient.
struct CompressedFn : torch::autograd::Function<CompressedFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& kc,
                               const at::Tensor& vc, int64_t cmp_block, int64_t cmp_stride, double scale,
                               int64_t dq) {
    BranchSpec spec;
    spec.branch = Branch::Compressed, spec.cmp_block = cmp_block, spec.cmp_stride = cmp_stride;
    spec.scale = scale, spec.dq = BackwardDq(dq);
    at::Tensor o = forward_common(ctx, q, kc, vc, spec);
    at::Tensor lse = ctx->saved_data["lse"].toTensor();
    ctx->mark_non_differentiable({lse});
    return {o, lse};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Gradients g = backward_common(ctx, grads);
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct SelectedFn : torch::autograd::Function<SelectedFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const at::Tensor& block_idx, int64_t sel_block,
                            double scale, int64_t dq) {
    BranchSpec spec;
    spec.branch = Branch::Selected, spec.block_idx = block_idx, spec.sel_block = sel_block;
    spec.scale = scale, spec.dq = BackwardDq(dq);
    return forward_common(ctx, q, k, v, spec);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Gradients g = backward_common(ctx, grads);
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t window, double scale, BackwardDq dq) {
  return WindowFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), window, scale, int64_t(dq));
}

at::Tensor selected_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& block_idx, int64_t sel_block, double scale, BackwardDq dq) {
  return SelectedFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), block_idx.contiguous(),
                           sel_block, scale, int64_t(dq));
}

BackwardDq parse_backward_dq(std::string_view value) {
  if (value == "kernel") return BackwardDq::kernel;
  if (value == "atomic") return BackwardDq::atomic;
  TORCH_CHECK(value == "slots", "NSA_SELECTED_DQ: expected kernel, atomic or slots, got '", value, "'");
  return BackwardDq::slots;
}

std::pair<at::Tensor, at::Tensor> compressed_attention_with_lse(const at::Tensor& q, const at::Tensor& kc,
                                                                const at::Tensor& vc, int64_t cmp_block,
                                                                int64_t cmp_stride, double scale, BackwardDq dq) {
  variable_list out = CompressedFn::apply(q.contiguous(), kc.contiguous(), vc.contiguous(), cmp_block, cmp_stride,
                                          scale, int64_t(dq));
  return {out[0], out[1]};
}

at::Tensor compressed_attention(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                int64_t cmp_block, int64_t cmp_stride, double scale) {
  return compressed_attention_with_lse(q, kc, vc, cmp_block, cmp_stride, scale).first;
}

}  // namespace nsa::cuda
