// The projection epilogue's autograd function and the hook the NSA layer's
// project() and the dense cell reach it through (nsa::split_projection).
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/projection_epilogue.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The split's scalars ride in saved_data (nothing else is saved: backward needs
// only the shape and the angles, never y).
void save_split(AutogradContext* ctx, const ProjectionSplit& s, int64_t rope_pos0, const at::Tensor& y) {
  ctx->saved_data["n_heads"] = s.n_heads;
  ctx->saved_data["n_groups"] = s.n_groups;
  ctx->saved_data["d_k"] = s.d_k;
  ctx->saved_data["d_v"] = s.d_v;
  ctx->saved_data["n_kv"] = int64_t(s.n_kv);
  ctx->saved_data["rotate_k"] = int64_t(s.rotate_k[0]) | int64_t(s.rotate_k[1]) << 1 | int64_t(s.rotate_k[2]) << 2;
  ctx->saved_data["rope_base"] = s.rope_base;
  ctx->saved_data["q_copies"] = int64_t(s.q_copies);
  ctx->saved_data["rope_pos0"] = rope_pos0;
  ctx->saved_data["B"] = y.size(0);
  ctx->saved_data["S"] = y.size(1);
  ctx->saved_data["dtype"] = int64_t(y.scalar_type());
}

ProjectionSplit load_split(AutogradContext* ctx) {
  ProjectionSplit s;
  s.n_heads = ctx->saved_data["n_heads"].toInt();
  s.n_groups = ctx->saved_data["n_groups"].toInt();
  s.d_k = ctx->saved_data["d_k"].toInt();
  s.d_v = ctx->saved_data["d_v"].toInt();
  s.n_kv = int(ctx->saved_data["n_kv"].toInt());
  const int64_t mask = ctx->saved_data["rotate_k"].toInt();
  for (int b = 0; b < 3; ++b) s.rotate_k[b] = (mask >> b) & 1;
  s.rope_base = ctx->saved_data["rope_base"].toDouble();
  s.q_copies = int(ctx->saved_data["q_copies"].toInt());
  return s;
}

struct ProjectionEpilogueFn : torch::autograd::Function<ProjectionEpilogueFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& y, ProjectionSplit s, int64_t rope_pos0) {
    save_split(ctx, s, rope_pos0, y);
    // An output nobody uses gets an undefined gradient, which the kernel reads
    // as zero, rather than a zero-filled tensor of its size.
    ctx->set_materialize_grads(false);
    variable_list out = projection_epilogue_forward(y, s, rope_pos0);
    // The extra handles of q: the same storage as its own tensor, not a view,
    // so autograd keeps them apart as outputs (each its own gradient, which
    // the backward kernel sums) and nothing ties their metadata to q's.
    for (int i = 1; i < s.q_copies; ++i) out.push_back(at::empty({0}, out[0].options()).set_(out[0]));
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const ProjectionSplit s = load_split(ctx);
    bool any = false;
    for (const auto& g : grads) any = any || g.defined();
    if (!any) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor dy = projection_epilogue_backward(
        grads, s, ctx->saved_data["rope_pos0"].toInt(), ctx->saved_data["B"].toInt(), ctx->saved_data["S"].toInt(),
        at::ScalarType(ctx->saved_data["dtype"].toInt()));
    return {dy, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

std::vector<at::Tensor> projection_epilogue(const at::Tensor& y, const ProjectionSplit& s, int64_t rope_pos0) {
  return ProjectionEpilogueFn::apply(y, s, rope_pos0);
}

std::vector<at::Tensor> projection_epilogue_hook(const at::Tensor& y, const ProjectionSplit& s, int64_t rope_pos0) {
  const auto dt = y.scalar_type();
  if (dt != at::kFloat && dt != at::kHalf && dt != at::kBFloat16) return {};
  return projection_epilogue(y, s, rope_pos0);
}

}  // namespace nsa::cuda
