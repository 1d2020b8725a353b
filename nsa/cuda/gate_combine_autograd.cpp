// gate_combine as an autograd function over the kernels of gate_combine.cu:
// forward saves the branch outputs and the gates as given (no copies: they are
// alive anyway, and autograd checks the saved gates' version at backward);
// backward computes only the gradients whose inputs require one.
#include <ATen/OpMathType.h>
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/gate_combine.h"
#include "nsa/cuda/row_delta.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GateCombineFn : torch::autograd::Function<GateCombineFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& o0, const at::Tensor& o1, const at::Tensor& o2,
                            const at::Tensor& gates, int64_t col0, int64_t col1, int64_t col2) {
    ctx->save_for_backward({o0, o1, o2, gates});
    ctx->saved_data["cols"] = std::vector<int64_t>{col0, col1, col2};
    const at::Tensor o[3] = {o0, o1, o2};
    return gate_combine_forward(o, gates, {col0, col1, col2});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<int64_t> c = ctx->saved_data["cols"].toIntVector();
    if (!grads[0].defined()) return variable_list(7);  // output unused: no gradient anywhere
    const at::Tensor o[3] = {saved[0], saved[1], saved[2]};
    const std::array<bool, 3> want_d_o = {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                          ctx->needs_input_grad(2)};
    // Each branch's attention backward needs rowsum(d o_c ⊙ o_c): made here
    // beside d o_c and offered to it (row_delta.h).
    GateCombineGrads g = gate_combine_backward(grads[0].contiguous(), o, saved[3], {c[0], c[1], c[2]}, want_d_o,
                                               ctx->needs_input_grad(3), /*want_delta=*/true);
    for (int i = 0; i < 3; ++i)
      if (g.delta[i].defined()) offer_row_delta(g.d_o[i], o[i], g.delta[i]);
    return {g.d_o[0], g.d_o[1], g.d_o[2], g.dg, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor gate_combine(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols) {
  // .to() and .contiguous() return the tensor itself when it already fits, so
  // the layer's gates (fp32, transposed) are saved as the caller holds them.
  return GateCombineFn::apply(o[0].contiguous(), o[1].contiguous(), o[2].contiguous(),
                              gates.to(at::toOpMathType(o[0].scalar_type())), cols[0], cols[1], cols[2]);
}

}  // namespace nsa::cuda
