// Brute-force ATen references of the NSA branches (DESIGN.md §2), written from
// the formulas with dense masks: any dtype (float64 for oracles), CPU or CUDA,
// differentiable through ordinary autograd. Same signatures as nsa_cuda.h.
// Slow and obvious on purpose: the oracle of every kernel test and benchmark.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace nsa::cuda {

at::Tensor ref_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t window, double scale);
at::Tensor ref_selected_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& block_idx, int64_t sel_block, double scale);
at::Tensor ref_compressed_attention(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                    int64_t cmp_block, int64_t cmp_stride, double scale);
at::Tensor ref_select_blocks(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                             int64_t cmp_stride, int64_t sel_block, int64_t n_sel, double scale);

// Group selection scores [B,S,G,n_blocks] (n_blocks = ceil(S/l')), in q's dtype:
// sum over the group's heads of sum over visible overlapping compressed blocks of
// p_cmp; -inf for non-candidates (j*l' > t); forced blocks are NOT marked here.
at::Tensor ref_selection_scores(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                                int64_t cmp_stride, int64_t sel_block, double scale);

// Masked attention with a [B,G,S,Sk] (or broadcastable) visibility mask; rows
// with no visible key give 0. Shared by the three references.
at::Tensor ref_masked_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& mask, double scale);

}  // namespace nsa::cuda
