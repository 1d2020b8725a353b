// Test-only (wgmma_test.cpp): wgmma.cuh's two warpgroup tiles on one 64 x 64
// problem, so the descriptors and fragment layouts are checked against a
// float64 product before any attention kernel relies on them.
#pragma once

#include <utility>

#include <ATen/ATen.h>

namespace nsa::cuda::testing {

// a, bk, bv: [64, 64] CUDA, bf16 or fp16, contiguous. Returns (s, o), fp32:
// s = a bk^T (warpgroup_a_bt, bk as a K-major tile), o = round(s) bv
// (warpgroup_c_b, bv as an MN-major tile, s rounded to the dtype as P is).
std::pair<at::Tensor, at::Tensor> wgmma_tiles(const at::Tensor& a, const at::Tensor& bk, const at::Tensor& bv);

}  // namespace nsa::cuda::testing
