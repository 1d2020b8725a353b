#include "nsa/cuda/compressed_cudnn.h"

#include <cmath>
#include <limits>
#include <optional>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/saved_spec.h"

namespace nsa::cuda {
namespace {

struct Dims {
  int64_t B, S, H, dk, Sk, G, dv, d;
  explicit Dims(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc, int64_t cmp_stride)
      : B(q.size(0)), S(q.size(1)), H(q.size(2)), dk(q.size(3)), Sk(kc.size(1)), G(kc.size(2)), dv(vc.size(3)),
        d(cmp_stride) {}
  int64_t rows() const { return S / d; }  // the fold's rows u
};

// A run's rows of an [B, S, H, width] tensor folded to [B, S/d, d·H, width]:
// cuDNN's [b, h, s, d] dims over heads r·H + h of the run and rows u >= u0, and
// the element offset of its first entry.
struct RunView {
  SdpaLayout layout;
  int64_t offset;
};
RunView fold(const Dims& x, const ResidueRun& run, int64_t width) {
  const int64_t n = run.r_hi - run.r_lo, row = x.d * x.H * width;
  return {SdpaLayout{{x.B, n * x.H, x.rows() - run.u0, width}, {x.S * x.H * width, width, row, 1}},
          run.u0 * row + run.r_lo * x.H * width};
}

// The run's cuDNN call: folded q, o and logsumexp; the keys repeated once per
// residue of the run ([B, Sk, n·G, ·], contiguous); causal from the top left.
SdpaCall call_of(const Dims& x, const ResidueRun& run, at::ScalarType dtype, int device, double scale,
                 std::optional<CudnnBackward> backward) {
  const int64_t n = run.r_hi - run.r_lo, sq = x.rows() - run.u0;
  SdpaCall c;
  c.device = device, c.dtype = dtype;
  c.q = fold(x, run, x.dk).layout;
  c.o = fold(x, run, x.dv).layout;
  c.k = bshd_layout(x.B, x.Sk, n * x.G, x.dk);
  c.v = bshd_layout(x.B, x.Sk, n * x.G, x.dv);
  // Forward: straight into our [B, S, H] logsumexp (the fold of width 1);
  // backward: a packed [B, n·H, sq] copy (cuDNN below 9.26 reads no other).
  c.stats = backward ? SdpaLayout{{x.B, n * x.H, sq, 1}, {n * x.H * sq, sq, 1, 1}} : fold(x, run, 1).layout;
  c.scale = scale;
  c.backward = backward.has_value();
  c.deterministic = backward == CudnnBackward::cudnn_deterministic;
  return c;
}

// kc [B, Sk, G, d] as the run's keys: n copies side by side per key row, in
// memory (with G = 1 the reshape alone would be a view with a zero stride,
// which the call's contiguous layout does not describe).
at::Tensor repeat_keys(const at::Tensor& kc, int64_t n) {
  if (n == 1) return kc;
  const auto s = kc.sizes();
  return kc.unsqueeze(2).expand({s[0], s[1], n, s[2], s[3]}).reshape({s[0], s[1], n * s[2], s[3]}).contiguous();
}

// The runs cuDNN computes for this shape (rows left for them).
std::vector<ResidueRun> live_runs(const Dims& x, int64_t cmp_block) {
  std::vector<ResidueRun> runs;
  for (const ResidueRun& r : residue_runs(cmp_block, x.d))
    if (x.rows() > r.u0) runs.push_back(r);
  return runs;
}

const void* bytes_at(const at::Tensor& t, int64_t offset) {
  return static_cast<const char*>(t.data_ptr()) + offset * int64_t(t.element_size());
}
void* bytes_at(at::Tensor& t, int64_t offset) { return static_cast<char*>(t.data_ptr()) + offset * int64_t(t.element_size()); }

struct CudnnCompressedFn : torch::autograd::Function<CudnnCompressedFn> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q,
                                                const at::Tensor& kc, const at::Tensor& vc, int64_t cmp_block,
                                                int64_t cmp_stride, double scale, CudnnBackward backward,
                                                int64_t dq) {
    auto [o, lse] = cudnn_compressed_forward(q, kc, vc, cmp_block, cmp_stride, scale);
    ctx->save_for_backward({q, kc, vc, o, lse});
    BranchSpec spec;  // what our backward would be asked, and cuDNN's reads
    spec.branch = Branch::Compressed, spec.cmp_block = cmp_block, spec.cmp_stride = cmp_stride;
    spec.scale = scale, spec.dq = BackwardDq(dq);
    save_spec_scalars(ctx, spec);
    // The backward is the one asked for with this forward, whatever is asked
    // of later calls before it runs.
    ctx->saved_data["backward"] = int64_t(backward);
    ctx->mark_non_differentiable({lse});
    return {o, lse};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor none;  // no gradient for the scalars
    if (!grads[0].defined()) return {none, none, none, none, none, none, none, none};
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &kc = saved[1], &vc = saved[2], &o = saved[3], &lse = saved[4];
    const BranchSpec spec = saved_spec_scalars(ctx);
    const auto backward = CudnnBackward(ctx->saved_data["backward"].toInt());
    const at::Tensor dout = grads[0].contiguous();
    const c10::cuda::CUDAGuard guard(q.device());
    if (backward == CudnnBackward::ours) {
      Gradients g = attention_backward(q, kc, vc, o, lse, dout, spec);
      return {g.dq, g.dk, g.dv, none, none, none, none, none};
    }
    Gradients g =
        cudnn_compressed_backward(q, kc, vc, o, lse, dout, spec.cmp_block, spec.cmp_stride, spec.scale, backward);
    return {g.dq, g.dk, g.dv, none, none, none, none, none};
  }
};

}  // namespace

std::vector<ResidueRun> residue_runs(int64_t cmp_block, int64_t cmp_stride) {
  std::vector<ResidueRun> runs;
  for (int64_t r = 0; r < cmp_stride; ++r) {
    // c_r = floor((r + 1 - l) / d) <= 0 (l >= 1, r < d): rows u >= -c_r see keys.
    const int64_t u0 = -floor_div(int(r + 1 - cmp_block), int(cmp_stride));
    if (!runs.empty() && runs.back().u0 == u0)
      runs.back().r_hi = r + 1;
    else
      runs.push_back({r, r + 1, u0});
  }
  return runs;
}

bool cudnn_compressed_pays(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc) {
  const double work = double(q.size(0)) * double(q.size(2)) * double(q.size(1)) * double(kc.size(1)) *
                      double(q.size(3) + vc.size(3));
  return work >= kCudnnCompressedWork;
}

std::string cudnn_compressed_declines(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                      int64_t cmp_block, int64_t cmp_stride, CudnnBackward backward) {
  if (!q.is_cuda() || !kc.is_cuda() || !vc.is_cuda()) return "not CUDA tensors";
  const auto dt = q.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16) return "dtype is neither fp16 nor bf16";
  if (kc.scalar_type() != dt || vc.scalar_type() != dt) return "q, k, v differ in dtype";
  if (q.dim() != 4 || kc.dim() != 4 || vc.dim() != 4) return "not [B,S,heads,dim] tensors";
  if (kc.size(0) != q.size(0) || vc.size(0) != q.size(0) || vc.size(1) != kc.size(1)) return "batch or keys differ";
  if (kc.size(2) != vc.size(2) || kc.size(2) == 0 || q.size(2) % kc.size(2) != 0)
    return "query heads are not a multiple of the KV groups";
  if (kc.size(3) != q.size(3)) return "q and k head dims differ";
  if (q.size(0) == 0 || q.size(1) == 0 || kc.size(1) == 0) return "empty batch, sequence or compressed keys";
  if (cmp_block < 1 || cmp_stride < 1) return "compression block or stride < 1";
  if (q.size(1) % cmp_stride != 0) return "sequence length is not a multiple of the compression stride";
  const bool ours = backward == CudnnBackward::ours;
  if (ours && (q.size(3) % 16 != 0 || vc.size(3) % 16 != 0)) return "head dims are not multiples of 16 (our backward)";
  // cuDNN's engines are asked with the scale the layer uses (1/sqrt(dk)).
  const double scale = 1.0 / std::sqrt(double(q.size(3)));
  const Dims x(q, kc, vc, cmp_stride);
  const c10::cuda::CUDAGuard guard(q.device());
  for (const ResidueRun& run : live_runs(x, cmp_block))
    for (const auto graph : {std::optional<CudnnBackward>(), std::optional(backward)}) {
      if (graph && ours) break;
      if (std::string why = sdpa_declines(call_of(x, run, dt, q.get_device(), scale, graph)); !why.empty()) return why;
    }
  return "";
}

Gradients cudnn_compressed_backward(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                    const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                                    int64_t cmp_block, int64_t cmp_stride, double scale, CudnnBackward backward) {
  TORCH_CHECK(backward != CudnnBackward::ours, "cudnn_compressed_backward runs cuDNN's backward");
  const c10::cuda::CUDAGuard guard(q.device());
  const Dims x(q, kc, vc, cmp_stride);
  at::Tensor dq = at::empty_like(q);
  if (poison_outputs()) dq.fill_(std::numeric_limits<float>::quiet_NaN());  // tests, as in the forward
  dq.narrow(1, 0, std::min(x.S, cmp_block - 1)).zero_();  // rows that see no key
  at::Tensor dk32 = at::zeros(kc.sizes(), kc.options().dtype(at::kFloat));
  at::Tensor dv32 = at::zeros(vc.sizes(), vc.options().dtype(at::kFloat));
  const at::Tensor lse_fold = lse.view({x.B, x.rows(), x.d * x.H});
  for (const ResidueRun& run : live_runs(x, cmp_block)) {
    const int64_t n = run.r_hi - run.r_lo;
    const at::Tensor kr = repeat_keys(kc, n), vr = repeat_keys(vc, n);
    const at::Tensor stats =
        lse_fold.narrow(1, run.u0, x.rows() - run.u0).narrow(2, run.r_lo * x.H, n * x.H).permute({0, 2, 1}).contiguous();
    at::Tensor dkr = at::empty_like(kr), dvr = at::empty_like(vr);
    const int64_t q_off = fold(x, run, x.dk).offset, o_off = fold(x, run, x.dv).offset;
    SdpaPointers ptr;
    ptr.q = bytes_at(q, q_off), ptr.k = kr.data_ptr(), ptr.v = vr.data_ptr();
    ptr.o = const_cast<void*>(bytes_at(o, o_off));
    ptr.stats = stats.data_ptr<float>(), ptr.dout = bytes_at(dout, o_off);
    ptr.dq = bytes_at(dq, q_off), ptr.dk = dkr.data_ptr(), ptr.dv = dvr.data_ptr();
    sdpa_run(call_of(x, run, q.scalar_type(), q.get_device(), scale, backward), ptr, q);
    // The n copies' gradients summed in fp32, rounded once below.
    dk32 += dkr.view({x.B, x.Sk, n, x.G, x.dk}).sum(2, /*keepdim=*/false, at::kFloat);
    dv32 += dvr.view({x.B, x.Sk, n, x.G, x.dv}).sum(2, /*keepdim=*/false, at::kFloat);
  }
  return {dq, dk32.to(kc.scalar_type()), dv32.to(vc.scalar_type())};
}

ForwardResult cudnn_compressed_forward(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                       int64_t cmp_block, int64_t cmp_stride, double scale) {
  const c10::cuda::CUDAGuard guard(q.device());
  const Dims x(q, kc, vc, cmp_stride);
  ForwardResult r;
  r.o = at::empty({x.B, x.S, x.H, x.dv}, q.options());
  r.lse = at::empty({x.B, x.S, x.H}, q.options().dtype(at::kFloat));
  if (poison_outputs()) {  // tests: an element no run writes shows as NaN
    r.o.fill_(std::numeric_limits<float>::quiet_NaN());
    r.lse.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  const int64_t empty_rows = std::min(x.S, cmp_block - 1);  // t < l - 1: no key visible
  r.o.narrow(1, 0, empty_rows).zero_();
  r.lse.narrow(1, 0, empty_rows).fill_(std::numeric_limits<float>::infinity());
  for (const ResidueRun& run : live_runs(x, cmp_block)) {
    const int64_t n = run.r_hi - run.r_lo;
    const at::Tensor kr = repeat_keys(kc, n), vr = repeat_keys(vc, n);
    SdpaPointers ptr;
    ptr.q = bytes_at(q, fold(x, run, x.dk).offset), ptr.k = kr.data_ptr(), ptr.v = vr.data_ptr();
    ptr.o = bytes_at(r.o, fold(x, run, x.dv).offset);
    ptr.stats = static_cast<float*>(bytes_at(r.lse, fold(x, run, 1).offset));
    sdpa_run(call_of(x, run, q.scalar_type(), q.get_device(), scale, std::nullopt), ptr, q);
  }
  return r;
}

std::pair<at::Tensor, at::Tensor> cudnn_compressed_attention_with_lse(const at::Tensor& q, const at::Tensor& kc,
                                                                      const at::Tensor& vc, int64_t cmp_block,
                                                                      int64_t cmp_stride, double scale,
                                                                      CudnnBackward backward, BackwardDq dq) {
  auto out = CudnnCompressedFn::apply(q.contiguous(), kc.contiguous(), vc.contiguous(), cmp_block, cmp_stride, scale,
                                      backward, int64_t(dq));
  return {out[0], out[1]};
}

}  // namespace nsa::cuda
