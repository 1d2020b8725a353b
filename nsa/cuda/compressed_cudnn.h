// The compressed branch through cuDNN's fused attention (cudnn_sdpa.h), where
// cuDNN has an engine for the call; our kernels (compressed_attention_with_lse,
// nsa_cuda.h) everywhere else.
//
// Why: the compressed branch is dense attention over S / d compressed keys, but
// its mask is no mask cuDNN has: query t sees key i iff i d + l - 1 <= t
// (DESIGN.md §2), a staircase one key wide every d queries. Folded, it is
// causal: write t = d u + r (0 <= r < d); then key i is visible iff
//   i <= u + c_r,   c_r = floor((r + 1 - l) / d)   (c_r <= 0),
// and c_r takes at most two values over r (one step where r + 1 - l crosses a
// multiple of d; with l = 32, d = 16: -2 for r < 15, -1 for r = 15). Within a
// run of residues with one c, the rows u >= -c, renumbered u' = u + c, see keys
// i <= u': plain top-left causal attention with S/d + c queries and every
// compressed key. The residues of a run are consecutive heads of the fold:
// q [B, S, H, dk] is [B, S/d, d·H, dk] with head r·H + h, so one run is one
// cuDNN call over the strided view — (r, h) flattened to heads, rows u' with a
// stride of d query rows — and no copy of q, dO, o or the logsumexp is made
// (the backward's packed logsumexp aside). cuDNN's grouped-query attention maps
// query head j to key head j / (heads ÷ key heads), so the run's n residues
// each need the group's keys: k and v are repeated n times ([B, Sk, n·G, d],
// small: Sk = S/d keys), and the backward sums the n copies' gradients in fp32.
// The rows no run covers (u < -c, i.e. t < l - 1) see no key: o = 0, logsumexp
// +inf, dq = 0, as our kernels give.
//
// Needs S a multiple of d (the fold), fp16/bf16, head dims cuDNN takes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nsa/cuda/cudnn_sdpa.h"
#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {

// Residues r in [r_lo, r_hi) whose queries t = d u + r see keys i <= u - u0.
struct ResidueRun {
  int64_t r_lo, r_hi, u0;
};
// The runs of the fold for block length l and stride d (at most two), in r order.
std::vector<ResidueRun> residue_runs(int64_t cmp_block, int64_t cmp_stride);

// Where cuDNN's calls pay for themselves (NSA_COMPRESSED_CUDNN=auto): from
// B·H·S·Sk·(dk + dv) >= 2^34 on, the work of all query-key pairs (about 2.3 times
// the forward's FLOPs, causality aside). Measured on an H200
// (BM_CompressedImpl*, BM_LayerCompressedImpl*, 2026-11-28): below it cuDNN's
// fixed cost loses — m7c at batch 8 and 2k (3.3e9) forward 0.090 against our
// 0.067 ms, backward 0.31 against 0.15, the layer +1.5 to +9 %; m7c at 8k
// (6.4e9) forward 0.089 / 0.064, the layer even — and above it cuDNN wins:
// paper_kernel at 8k (8.6e10) forward 0.30 / 0.65, backward 1.2 / 1.9; m7c at
// 64k (4.1e11) 1.06 / 2.06 and 3.1 / 6.5; paper_kernel at 64k 9.8 / 25.4 and
// 34 / 90 (the layer's forward + backward 281 against 351 ms).
inline constexpr double kCudnnCompressedWork = 17179869184.0;  // 2^34
bool cudnn_compressed_pays(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc);

// Why cuDNN cannot run this compressed call, or "" when it can: CUDA tensors of
// fp16/bf16, q [B,S,H,dk], kc [B,Sk,G,dk], vc [B,Sk,G,dv] with Sk >= 1, H a
// multiple of G, S a multiple of cmp_stride, head dims our backward tiles when
// it is the backward, and a cuDNN engine for every call of the forward (and of
// the backward, when `backward` is cuDNN's) on this device (asked once per
// shape and kept).
std::string cudnn_compressed_declines(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                      int64_t cmp_block, int64_t cmp_stride,
                                      CudnnBackward backward = CudnnBackward::ours);

// The forward alone, without autograd (benchmarks, tests): o [B,S,H,dv] and the
// fp32 logsumexp [B,S,H] (+inf where no key is visible), as attention_forward
// returns them. Call only where cudnn_compressed_declines(...) is "".
ForwardResult cudnn_compressed_forward(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                       int64_t cmp_block, int64_t cmp_stride, double scale);

// cuDNN's backward alone, without autograd (benchmarks): dq, dk, dv from the
// forward's o and logsumexp (cudnn_compressed_forward). `backward` is one of
// cuDNN's (deterministic or atomic).
Gradients cudnn_compressed_backward(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                    const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                                    int64_t cmp_block, int64_t cmp_stride, double scale, CudnnBackward backward);

// Compressed attention through cuDNN, differentiable (q, kc, vc), with its
// logsumexp (no gradient) as compressed_attention_with_lse returns it; the
// backward the one named here (ours making dq as `dq` says). Call only where
// cudnn_compressed_declines(..., backward) is "".
std::pair<at::Tensor, at::Tensor> cudnn_compressed_attention_with_lse(const at::Tensor& q, const at::Tensor& kc,
                                                                      const at::Tensor& vc, int64_t cmp_block,
                                                                      int64_t cmp_stride, double scale,
                                                                      CudnnBackward backward = CudnnBackward::ours,
                                                                      BackwardDq dq = BackwardDq::kernel);

}  // namespace nsa::cuda
