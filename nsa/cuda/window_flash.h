// The window branch through libtorch's FlashAttention-2 (its sliding-window
// kernels, `at::_flash_attention_forward` with window_size_left = window - 1
// and a causal mask), where that kernel applies; our own window kernel
// (window_attention, nsa_cuda.h) everywhere else.
//
// Why both: the window branch is plain causal attention with a band, what
// FlashAttention-2 was written for, so FA2 is the natural yardstick and an
// independent second implementation. Measured on the H100 at the m7c_125m
// training shape (B=8, S=2048, 12 heads in 2 groups, d=64, w=512; BM_WindowImpl,
// 2026-11-25): FA2 forward 0.240 ms, backward 0.495; ours 0.199 and 0.517 —
// 0.735 against 0.716 ms per layer. FA2 runs only when asked for
// (NSA_SDPA_NO_FLASH=0); by default the window's forward is cuDNN's where it
// applies (window_cudnn.h) and ours elsewhere, and ours is the only choice for
// what neither library takes (fp32, head dims they lack).
//
// What changes with FA2: its backward accumulates dq with float atomics unless
// deterministic algorithms are on (at::globalContext().deterministicAlgorithms(),
// which it honours), so the window's gradients may differ in the last bits from
// run to run where ours are bitwise reproducible.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/ATen.h>

namespace nsa::cuda {

// Why FA2 cannot run this window call, or "" when it can: CUDA tensors of
// fp16/bf16 on a device of compute capability >= 8.0, q [B,S,H,d], k and v
// [B,S,G,d] with one head dim d <= 256, a multiple of 8, H a multiple of G,
// as many keys as queries, window >= 1.
std::string flash_window_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window);

// Sliding window through FA2 (the same function as window_attention: query t
// sees keys [max(0, t-window+1), t]); differentiable through ATen's own
// backward. Call only where flash_window_declines(...) is "".
at::Tensor flash_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  double scale);

}  // namespace nsa::cuda
