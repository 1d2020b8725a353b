// swiglu as an autograd function over the kernels of swiglu.cu: forward saves
// gu (alive anyway: it is the GEMM's output), backward recomputes σ from it
// rather than keeping an [rows, F] activation for backward as ATen's silu does.
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/swiglu.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gu) {
    ctx->save_for_backward({gu});
    return swiglu_forward(gu);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (!grads[0].defined()) return {at::Tensor()};
    return {swiglu_backward(grads[0].contiguous(), ctx->get_saved_variables()[0])};
  }
};

}  // namespace

at::Tensor swiglu(const at::Tensor& gu) { return SwigluFn::apply(gu.contiguous()); }

}  // namespace nsa::cuda
