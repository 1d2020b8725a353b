// One cuDNN fused-attention call (the frontend's SDPA graph) described as plain
// data: each tensor's dims in cuDNN's [b, h, s, d] order with its strides, so
// that a view of our memory — our [B, S, heads, d] layout, a slice of its rows,
// a fold of its sequence into heads — goes to cuDNN without a copy; the mask
// (causal from the top-left corner, optionally a band); the scale; forward or
// which backward. Plans are built once per description and kept for the
// process. The window branch (window_cudnn.h) and the compressed branch
// (compressed_cudnn.h) are its two callers; cuDNN's headers stay in
// cudnn_sdpa.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <tuple>

#include <ATen/core/Tensor.h>

namespace nsa::cuda {

// Which backward follows a cuDNN forward in the layer: our branch kernels from
// cuDNN's logsumexp (bitwise reproducible), cuDNN's backward graph with its
// deterministic dq, or cuDNN's backward with float atomics in dq (not
// reproducible bit for bit). Chosen per call and saved with the call's forward,
// so a later choice (another layer, another thread, a CUDA graph replayed later)
// never changes the backward of a forward already run.
enum class CudnnBackward { ours, cudnn_deterministic, cudnn_atomic };
// The choice by a flag's value (ours | cudnn | cudnn_atomic; nsa/flags.cpp lists
// the same values for NSA_WINDOW_BWD and NSA_COMPRESSED_BWD and refuses
// others); throws naming `flag` on any other text.
CudnnBackward parse_cudnn_backward(std::string_view flag, std::string_view value);

struct SdpaLayout {
  std::array<int64_t, 4> dim{}, stride{};  // [b, h, s, d]
  auto tie() const { return std::tie(dim, stride); }
};
// Our [B, S, heads, d] memory as cuDNN's [b, h, s, d]: heads next to each other
// in a row of the sequence.
SdpaLayout bshd_layout(int64_t B, int64_t S, int64_t heads, int64_t d);

struct SdpaCall {
  int device = 0;
  at::ScalarType dtype = at::kBFloat16;  // fp16 or bf16; the logsumexp is fp32
  SdpaLayout q, k, v, o;  // dq is written in q's layout, dk in k's, dv in v's; dout is read in o's
  // The logsumexp per (b, h, s), [b, h, s, 1]: where the forward writes it; the
  // backward reads it packed ([B, H, S], cuDNN below 9.26 takes no other).
  SdpaLayout stats;
  int64_t window = 0;  // a band of `window` keys (query - window < key <= query); 0: causal only
  double scale = 1.0;
  bool backward = false;
  bool deterministic = false;  // backward: cuDNN's deterministic dq (no float atomics)
  auto tie() const {
    return std::tie(device, dtype, q.dim, q.stride, k.dim, k.stride, v.dim, v.stride, o.dim, o.stride, stats.dim,
                    stats.stride, window, scale, backward, deterministic);
  }
  bool operator<(const SdpaCall& other) const { return tie() < other.tie(); }
};

// "" when cuDNN has an engine for the call on its device, else cuDNN's reason
// (asked once per description; the plan or the reason is kept). A call first
// met inside a CUDA graph capture is declined (building a plan may synchronize).
std::string sdpa_declines(const SdpaCall& call);

// The tensors' memory, each as the call's layout describes it from this pointer.
struct SdpaPointers {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;  // forward: written; backward: read
  float* stats = nullptr;
  const void* dout = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
};
// Runs the call on the current stream (its device's handle); `like` gives the
// workspace's device. Throws with cuDNN's reason when it has no plan.
void sdpa_run(const SdpaCall& call, const SdpaPointers& ptr, const at::Tensor& like);

// The file of the libcudnn this process runs on (one per process: libtorch's
// cuDNN work and ours share it), or "?".
std::string cudnn_library_path();

}  // namespace nsa::cuda
