#include "nsa/cuda/window_cudnn.h"

#include <cmath>
#include <optional>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/cudnn_sdpa.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/saved_spec.h"
#include "nsa/cuda/window_library.h"

namespace nsa::cuda {
namespace {

// The cuDNN call of a window forward (backward: nullopt), or of the backward
// named: our [B, S, heads, d] tensors as they are, causal with a band of
// `window` keys when the window is shorter than the sequence.
SdpaCall call_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window, double scale,
                 std::optional<CudnnBackward> backward) {
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = k.size(2);
  SdpaCall c;
  c.device = q.get_device(), c.dtype = q.scalar_type();
  c.q = bshd_layout(B, S, H, q.size(3));
  c.k = bshd_layout(B, S, G, k.size(3));
  c.v = bshd_layout(B, S, G, v.size(3));
  c.o = bshd_layout(B, S, H, v.size(3));
  // The forward writes the logsumexp in our layout ([B,S,H], ForwardResult::lse)
  // so our backward reads it as it is; cuDNN's backward takes it packed [B,H,S].
  c.stats = backward ? SdpaLayout{{B, H, S, 1}, {H * S, S, 1, 1}} : SdpaLayout{{B, H, S, 1}, {S * H, 1, H, 1}};
  c.window = window < S ? window : 0;
  c.scale = scale;
  c.backward = backward.has_value();
  c.deterministic = backward == CudnnBackward::cudnn_deterministic;
  return c;
}

}  // namespace

ForwardResult cudnn_window_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                   double scale) {
  // cuDNN's handle and plans are per device: the current one must be q's.
  const c10::cuda::CUDAGuard guard(q.device());
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2);
  ForwardResult r;
  r.o = at::empty({B, S, H, v.size(3)}, q.options());
  r.lse = at::empty({B, S, H}, q.options().dtype(at::kFloat));
  SdpaPointers ptr;
  ptr.q = q.data_ptr(), ptr.k = k.data_ptr(), ptr.v = v.data_ptr(), ptr.o = r.o.data_ptr();
  ptr.stats = r.lse.data_ptr<float>();
  sdpa_run(call_of(q, k, v, window, scale, std::nullopt), ptr, q);
  return r;
}

Gradients cudnn_window_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                                const at::Tensor& lse, const at::Tensor& dout, int64_t window, double scale,
                                CudnnBackward backward) {
  const c10::cuda::CUDAGuard guard(q.device());
  Gradients g{at::empty_like(q), at::empty_like(k), at::empty_like(v)};
  const at::Tensor lse_bhs = lse.permute({0, 2, 1}).contiguous();
  SdpaPointers ptr;
  ptr.q = q.data_ptr(), ptr.k = k.data_ptr(), ptr.v = v.data_ptr(), ptr.o = o.data_ptr();
  ptr.stats = lse_bhs.data_ptr<float>(), ptr.dout = dout.data_ptr();
  ptr.dq = g.dq.data_ptr(), ptr.dk = g.dk.data_ptr(), ptr.dv = g.dv.data_ptr();
  sdpa_run(call_of(q, k, v, window, scale, backward), ptr, q);
  return g;
}

namespace {

struct CudnnWindowFn : torch::autograd::Function<CudnnWindowFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, int64_t window, double scale, CudnnBackward backward,
                            int64_t dq) {
    auto [o, lse] = cudnn_window_forward(q, k, v, window, scale);
    ctx->save_for_backward({q, k, v, o, lse});
    BranchSpec spec;  // what our backward would be asked, and cuDNN's reads
    spec.branch = Branch::Window, spec.window = window, spec.scale = scale, spec.dq = BackwardDq(dq);
    save_spec_scalars(ctx, spec);
    // The backward is the one asked for with this forward, whatever is asked
    // of later calls before it runs.
    ctx->saved_data["backward"] = int64_t(backward);
    return o;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor none;  // no gradient for window, scale, backward
    if (!grads[0].defined()) return {none, none, none, none, none, none, none};
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &o = saved[3], &lse = saved[4];
    const BranchSpec spec = saved_spec_scalars(ctx);
    const auto backward = CudnnBackward(ctx->saved_data["backward"].toInt());
    const at::Tensor dout = grads[0].contiguous();
    const c10::cuda::CUDAGuard guard(q.device());
    if (backward == CudnnBackward::ours) {
      Gradients g = attention_backward(q, k, v, o, lse, dout, spec);
      return {g.dq, g.dk, g.dv, none, none, none, none};
    }
    Gradients g = cudnn_window_backward(q, k, v, o, lse, dout, spec.window, spec.scale, backward);
    return {g.dq, g.dk, g.dv, none, none, none, none};
  }
};

}  // namespace

std::string cudnn_window_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  CudnnBackward backward) {
  if (std::string why = window_library_declines(q, k, v, window); !why.empty()) return why;
  if (k.size(3) != q.size(3)) return "q and k head dims differ";
  // Our backward (the default after cuDNN's forward) tiles head dims in
  // multiples of 16 (nsa_cuda.h).
  const bool ours = backward == CudnnBackward::ours;
  if (ours && (q.size(3) % 16 != 0 || v.size(3) % 16 != 0)) return "head dims are not multiples of 16 (our backward)";
  // cuDNN's engines are asked with the scale the layer uses (1/sqrt(dk)); the
  // answer does not depend on the scale's value.
  const double scale = 1.0 / std::sqrt(double(q.size(3)));
  const c10::cuda::CUDAGuard guard(q.device());
  for (const auto graph : {std::optional<CudnnBackward>(), std::optional(backward)}) {
    if (graph && ours) break;
    if (std::string why = sdpa_declines(call_of(q, k, v, window, scale, graph)); !why.empty()) return why;
  }
  return "";
}

at::Tensor cudnn_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  double scale, CudnnBackward backward, BackwardDq dq) {
  return CudnnWindowFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), window, scale, backward, int64_t(dq));
}

}  // namespace nsa::cuda
