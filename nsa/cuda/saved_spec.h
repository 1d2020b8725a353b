// A BranchSpec's scalars kept with an autograd call's forward (saved_data) and
// read back by its backward: the branch functions of autograd.cpp and the
// library routes (window_cudnn.cpp, compressed_cudnn.cpp) save the same spec
// the same way. block_idx, a tensor, rides among the saved tensors instead.
#pragma once

#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {

inline void save_spec_scalars(torch::autograd::AutogradContext* ctx, const BranchSpec& spec) {
  ctx->saved_data["branch"] = int64_t(spec.branch);
  ctx->saved_data["window"] = spec.window;
  ctx->saved_data["cmp_block"] = spec.cmp_block;
  ctx->saved_data["cmp_stride"] = spec.cmp_stride;
  ctx->saved_data["sel_block"] = spec.sel_block;
  ctx->saved_data["dq"] = int64_t(spec.dq);
  ctx->saved_data["scale"] = spec.scale;
}

inline BranchSpec saved_spec_scalars(torch::autograd::AutogradContext* ctx) {
  BranchSpec spec;
  spec.branch = Branch(ctx->saved_data["branch"].toInt());
  spec.window = ctx->saved_data["window"].toInt();
  spec.cmp_block = ctx->saved_data["cmp_block"].toInt();
  spec.cmp_stride = ctx->saved_data["cmp_stride"].toInt();
  spec.sel_block = ctx->saved_data["sel_block"].toInt();
  spec.dq = BackwardDq(ctx->saved_data["dq"].toInt());
  spec.scale = ctx->saved_data["scale"].toDouble();
  return spec;
}

}  // namespace nsa::cuda
