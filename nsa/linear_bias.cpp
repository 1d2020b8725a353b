#include "nsa/linear_bias.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace nsa {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LinearBiasFn : torch::autograd::Function<LinearBiasFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    ctx->save_for_backward({x, w});
    auto out_shape = x.sizes().vec();
    out_shape.back() = w.size(1);
    const at::Tensor x2 = x.reshape({-1, x.size(-1)});
    // 16-bit: the bias in cuBLAS's epilogue (one GEMM). The parity runs
    // (may_reorder_sums) keep the plain GEMM then an add: cuBLASLt's
    // bias-epilogue GEMM picks its summation order by the row count, which
    // moved fp32 outputs by 3-4e-5 between one block and the whole sequence
    // (H200, 2026-11-26); the plain GEMM did not.
    return (may_reorder_sums(x.scalar_type()) ? at::addmm(b, x2, w) : at::mm(x2, w).add_(b)).view(out_shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor dy = grads[0].reshape({-1, w.size(1)});
    at::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) dx = at::mm(dy, w.t()).view(x.sizes());
    if (ctx->needs_input_grad(1)) dw = at::mm(x.reshape({-1, x.size(-1)}).t(), dy);
    if (ctx->needs_input_grad(2)) db = at::mm(at::ones({1, dy.size(0)}, dy.options()), dy).view({w.size(1)});
    return {dx, dw, db};
  }
};

struct LinearBiasEachFn : torch::autograd::Function<LinearBiasEachFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    ctx->save_for_backward({x, w});
    const at::Tensor bias = b.unsqueeze(1);  // [E, 1, N]
    return may_reorder_sums(x.scalar_type()) ? at::baddbmm(bias, x, w) : at::bmm(x, w).add_(bias);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor& dy = grads[0];
    at::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) dx = at::bmm(dy, w.transpose(1, 2));
    if (ctx->needs_input_grad(1)) dw = at::bmm(x.transpose(1, 2), dy);
    if (ctx->needs_input_grad(2))
      db = at::bmm(at::ones({dy.size(0), 1, dy.size(1)}, dy.options()), dy).view({dy.size(0), dy.size(2)});
    return {dx, dw, db};
  }
};

}  // namespace

at::Tensor linear_bias_each(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  TORCH_CHECK(x.dim() == 3 && w.dim() == 3 && b.dim() == 2 && x.size(0) == w.size(0) && b.size(0) == w.size(0) &&
                  x.size(2) == w.size(1) && b.size(1) == w.size(2),
              "linear_bias_each: x ", x.sizes(), ", w ", w.sizes(), ", b ", b.sizes(),
              " do not make E maps x[e]·w[e] + b[e]");
  return LinearBiasEachFn::apply(x, w, b);
}

at::Tensor linear_bias(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  TORCH_CHECK(w.dim() == 2 && b.dim() == 1 && x.size(-1) == w.size(0) && b.size(0) == w.size(1),
              "linear_bias: x ", x.sizes(), ", w ", w.sizes(), ", b ", b.sizes(), " do not make x·w + b");
  return LinearBiasFn::apply(x, w, b);
}

}  // namespace nsa
