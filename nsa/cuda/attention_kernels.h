// Internal launchers of the attention kernels (attention_fwd.cu,
// attention_bwd_dq.cu, attention_bwd_dkdv.cu) and the tiling choices they
// share. The orchestration (checks, allocation, reverse index) lives in
// attention_launch.cpp; tests and benchmarks go through that, never here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "nsa/cuda/attention_common.cuh"

namespace nsa::cuda {

void launch_attention_fwd(Branch br, at::ScalarType dtype, AttnParams& p);
// Tensor-core forward (v2, attention_fwd_tc.cu) for fp16/bf16 and the head dims
// it tiles; returns false, launching nothing, when v1 must run instead (fp32,
// other dims, unaligned tensors, or force_v1_kernels()).
bool launch_attention_fwd_tc(Branch br, at::ScalarType dtype, AttnParams& p);
// Tensor-core backward dq (v2, attention_bwd_tc.cu), same contract.
bool launch_attention_bwd_dq_tc(Branch br, at::ScalarType dtype, AttnParams& p);
void launch_attention_bwd_dq(Branch br, at::ScalarType dtype, AttnParams& p);
void launch_attention_bwd_dkdv(Branch br, at::ScalarType dtype, AttnParams& p);
// rowsum(a ⊙ b) over the last dim, fp32 (row_dot.cu): the backward's delta.
at::Tensor row_dot_fp32(const at::Tensor& a, const at::Tensor& b);

// Query-centric tiling: the largest row count R (<= 64) whose shared memory
// fits the budget; Selected (and large groups) take one query and up to R heads
// of the group per CTA, Window/Compressed pack R / h consecutive queries.
inline void choose_query_tiling(Branch br, size_t (*smem_floats)(int, int, int), AttnParams& p) {
  int R = 64;
  while (R > 1 && smem_floats(R, p.dk, p.dv) * sizeof(float) > kSmemBudget) R /= 2;
  TORCH_CHECK(smem_floats(R, p.dk, p.dv) * sizeof(float) <= kSmemBudget,
              "no tiling fits shared memory for dk=", p.dk, " dv=", p.dv);
  if (br == Branch::Selected || p.h >= R) {
    p.q_tile = 1;
    p.head_chunk = std::min(p.h, R);
  } else {
    p.head_chunk = p.h;
    p.q_tile = R / p.h;
  }
  p.rows = p.q_tile * p.head_chunk;
}

// Key-centric tiling (dk/dv): 32 keys per CTA when it fits, else 16; then the
// largest row chunk (<= 32) that fits.
inline void choose_key_tiling(AttnParams& p) {
  for (int BK : {32, 16, 8}) {
    for (int R = 32; R >= 4; R /= 2) {
      if (dkdv_smem_floats(R, BK, p.dk, p.dv) * sizeof(float) <= kSmemBudget) {
        p.key_tile = BK;
        p.rows = R;
        return;
      }
    }
  }
  TORCH_CHECK(false, "no dk/dv tiling fits shared memory for dk=", p.dk, " dv=", p.dv);
}

}  // namespace nsa::cuda
