// add_rms_norm as an autograd function over the kernels of add_rms_norm.cu.
// Forward saves s (the residual stream, alive anyway), the weight and the
// per-row ρ; backward takes both outputs' gradients at once and returns the one
// gradient x and delta share.
#include <ATen/OpMathType.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>

#include "nsa/cuda/add_rms_norm.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct AddRmsNormFn : torch::autograd::Function<AddRmsNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& delta,
                               const at::Tensor& weight, double eps) {
    AddRmsNormOut out = add_rms_norm_forward(x, delta, weight, eps);
    ctx->save_for_backward({out.s, weight, out.rstd});
    return {out.s, out.h};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    if (!grads[0].defined() && !grads[1].defined()) return variable_list(4);
    const at::Tensor ds_out = grads[0].defined() ? grads[0].contiguous() : at::Tensor();
    const at::Tensor dh = grads[1].defined() ? grads[1].contiguous() : at::Tensor();
    AddRmsNormGrads g = add_rms_norm_backward(ds_out, dh, saved[0], saved[1], saved[2]);
    return {ctx->needs_input_grad(0) ? g.ds : at::Tensor(), ctx->needs_input_grad(1) ? g.ds : at::Tensor(),
            ctx->needs_input_grad(2) ? g.dw : at::Tensor(), at::Tensor()};
  }
};

}  // namespace

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta,
                                               const at::Tensor& weight, double eps) {
  if (!std::string(add_rms_norm_declines(x)).empty()) return {};
  // .to() returns the tensor itself when it already fits: the fp32 master
  // weight of a 16-bit model is used as it is, no cast each way.
  const variable_list out =
      AddRmsNormFn::apply(x.contiguous(), delta.to(x.scalar_type()).contiguous(), weight.to(at::toOpMathType(x.scalar_type())).contiguous(), eps);
  return {out[0], out[1]};
}

}  // namespace nsa::cuda
