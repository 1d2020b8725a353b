// The window branch through cuDNN's fused attention (the frontend's SDPA graph
// with a causal mask and a diagonal band of `window` keys), where cuDNN has an
// engine for the call; our own window kernel (window_attention, nsa_cuda.h) or
// FlashAttention-2 (window_flash.h) everywhere else.
//
// Why a third implementation: the window branch is plain causal attention with
// a band, and on Hopper cuDNN runs it with wgmma and TMA tiles where ours and
// FA2 use Ampere's mma.sync. Measured on an H200 at the m7c training shape
// (B=8, S=2048, 12 heads in 2 groups, d=64, w=512; BM_WindowImpl, 2026-11-26):
// forward 0.107 ms against ours 0.197 and FA2's 0.234.
//
// The backward: cuDNN's forward writes the logsumexp in our layout ([B,S,H]
// fp32), so our window backward kernels (bitwise reproducible) can run from
// it. cuDNN's own backward is there too (CudnnBackward, cudnn_sdpa.h; the layer's flag
// NSA_WINDOW_BWD, whose `auto` takes ours under deterministic algorithms and
// cuDNN's with atomics otherwise); its deterministic algorithm measured slower
// than ours at every shape (m7c training shape 0.70 against 0.51 ms; batch 1
// at 64k 49 ms against 2.0).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <ATen/ATen.h>

#include "nsa/cuda/cudnn_sdpa.h"
#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {

// Why cuDNN cannot run this window call, or "" when it can: CUDA tensors of
// fp16/bf16, q [B,S,H,dk], k [B,S,G,dk], v [B,S,G,dv], H a multiple of G, as
// many keys as queries, window >= 1, head dims our backward tiles (multiples of
// 16) when it is the backward, and a cuDNN engine for the forward graph (and
// the backward graph, when `backward` is cuDNN's) of this shape on this device
// (asked once per shape; the answer, cuDNN's own message when it declines, is
// cached). Ask with the backward the call will use: cuDNN may take a forward
// and decline its backward.
std::string cudnn_window_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  CudnnBackward backward = CudnnBackward::ours);

// The forward alone, without autograd (benchmarks): o [B,S,H,dv] and the fp32
// logsumexp [B,S,H], as attention_forward returns them. Inputs contiguous; call
// only where cudnn_window_declines(...) is "".
ForwardResult cudnn_window_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                   double scale);

// cuDNN's backward alone, without autograd (benchmarks): dq, dk, dv from
// cudnn_window_forward's o and logsumexp. `backward` is one of cuDNN's
// (deterministic or with atomics); call only where cudnn_window_declines(...,
// backward) is "".
Gradients cudnn_window_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                                const at::Tensor& lse, const at::Tensor& dout, int64_t window, double scale,
                                CudnnBackward backward);

// Sliding window through cuDNN (the same function as window_attention: query t
// sees keys [max(0, t-window+1), t]), differentiable (q, k, v), its backward
// the one named here (ours making dq as `dq` says). Call only where
// cudnn_window_declines(..., backward) is "".
at::Tensor cudnn_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  double scale, CudnnBackward backward = CudnnBackward::ours,
                                  BackwardDq dq = BackwardDq::kernel);

}  // namespace nsa::cuda
