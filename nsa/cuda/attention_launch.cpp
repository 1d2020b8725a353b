// Orchestration of the attention kernels: input checks, allocation, delta,
// the selected branch's reverse index, then the launches (attention_kernels.h).
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/attention_kernels.h"
#include "nsa/cuda/forked_stream.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/reverse_index.h"
#include "nsa/cuda/row_delta.h"

namespace nsa::cuda {
namespace {

std::atomic<bool> g_poison{false};
std::atomic<bool> g_overlap{true};
std::atomic<int> g_last_backward_dq{int(BackwardDq::kernel)};
std::atomic<int> g_cta_order{int(CtaOrder::HeavyFirst)};

at::Tensor new_output_like(const at::Tensor& t) { return new_output(t.sizes(), t.options()); }

const char* branch_name(Branch br) {
  switch (br) {
    case Branch::Window: return "window_attention";
    case Branch::Compressed: return "compressed_attention";
    default: return "selected_attention";
  }
}

void check_tensor(const char* fn, const char* what, const at::Tensor& t, const at::Tensor& q) {
  TORCH_CHECK(t.defined(), fn, ": ", what, " is undefined");
  TORCH_CHECK(t.is_cuda(), fn, ": ", what, " must be a CUDA tensor, got ", t.device());
  TORCH_CHECK(t.device() == q.device(), fn, ": ", what, " on ", t.device(), ", q on ", q.device());
  TORCH_CHECK(t.dim() == 4, fn, ": ", what, " must be 4-D, got ", t.sizes());
  TORCH_CHECK(t.is_contiguous(), fn, ": ", what, " must be contiguous");
  TORCH_CHECK(t.scalar_type() == q.scalar_type(), fn, ": ", what, " is ", t.scalar_type(), ", q is ",
              q.scalar_type());
}

// Validates the inputs and fills every size and hyper-parameter of p.
AttnParams make_params(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const BranchSpec& spec) {
  const char* fn = branch_name(spec.branch);
  check_tensor(fn, "q", q, q);
  check_tensor(fn, "k", k, q);
  check_tensor(fn, "v", v, q);
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), dk = q.size(3);
  const int64_t Sk = k.size(1), G = k.size(2), dv = v.size(3);
  TORCH_CHECK(k.size(0) == B && v.size(0) == B, fn, ": batch sizes differ: q ", q.sizes(), ", k ",
              k.sizes(), ", v ", v.sizes());
  TORCH_CHECK(v.size(1) == Sk && v.size(2) == G, fn, ": k ", k.sizes(), " and v ", v.sizes(),
              " disagree on keys or groups");
  TORCH_CHECK(k.size(3) == dk, fn, ": q dk=", dk, " but k dk=", k.size(3));
  TORCH_CHECK(G > 0 && H % G == 0, fn, ": H=", H, " is not a multiple of G=", G);
  TORCH_CHECK(dk % 16 == 0 && dk > 0 && dk <= 256 && dv % 16 == 0 && dv > 0 && dv <= 256, fn,
              ": head dims must be multiples of 16 up to 256, got dk=", dk, " dv=", dv);
  TORCH_CHECK(spec.branch == Branch::Compressed || Sk == S, fn, ": k has ", Sk, " positions, q has ", S);
  TORCH_CHECK(std::isfinite(spec.scale), fn, ": scale must be finite, got ", spec.scale);
  TORCH_CHECK(B * S * H < (int64_t(1) << 31) && B * Sk * G < (int64_t(1) << 31), fn,
              ": sizes overflow 32-bit row counts");

  AttnParams p;
  p.B = int(B), p.S = int(S), p.Sk = int(Sk), p.H = int(H), p.G = int(G), p.h = int(H / G);
  p.dk = int(dk), p.dv = int(dv);
  p.scale = float(spec.scale);
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr();
  p.heavy_first = CtaOrder(g_cta_order.load()) == CtaOrder::HeavyFirst;
  switch (spec.branch) {
    case Branch::Window:
      TORCH_CHECK(spec.window >= 0 && spec.window < (int64_t(1) << 30), fn, ": bad window ", spec.window);
      p.window = int(spec.window);
      break;
    case Branch::Compressed:
      TORCH_CHECK(spec.cmp_block > 0 && spec.cmp_stride > 0, fn, ": need cmp_block, cmp_stride > 0, got ",
                  spec.cmp_block, ", ", spec.cmp_stride);
      p.cmp_block = int(spec.cmp_block), p.cmp_stride = int(spec.cmp_stride);
      break;
    case Branch::Selected: {
      const at::Tensor& bi = spec.block_idx;
      TORCH_CHECK(spec.sel_block > 0, fn, ": sel_block must be > 0, got ", spec.sel_block);
      TORCH_CHECK(bi.defined() && bi.is_cuda() && bi.device() == q.device(), fn,
                  ": block_idx must be a CUDA tensor on q's device");
      TORCH_CHECK(bi.scalar_type() == at::kInt && bi.is_contiguous() && bi.dim() == 4, fn,
                  ": block_idx must be contiguous int32 [B,S,G,n], got ", bi.scalar_type(), " ", bi.sizes());
      TORCH_CHECK(bi.size(0) == B && bi.size(1) == S && bi.size(2) == G, fn, ": block_idx ", bi.sizes(),
                  " does not match [B,S,G]=[", B, ",", S, ",", G, "]");
      p.sel_block = int(spec.sel_block);
      p.by_sel_block = FastDiv(p.sel_block);
      p.n_sel = int(bi.size(3));
      p.n_blocks = int((Sk + spec.sel_block - 1) / spec.sel_block);
      p.block_idx = bi.data_ptr<int>();
      break;
    }
  }
  return p;
}

}  // namespace

void set_poison_outputs(bool on) { g_poison.store(on); }

at::Tensor new_output(at::IntArrayRef sizes, const at::TensorOptions& opts) {
  if (!g_poison.load()) return at::empty(sizes, opts);
  return at::full(sizes, std::numeric_limits<double>::quiet_NaN(), opts);
}
bool poison_outputs() { return g_poison.load(); }
void set_stream_overlap(bool on) { g_overlap.store(on); }
void set_cta_order(CtaOrder order) { g_cta_order.store(int(order)); }
CtaOrder cta_order() { return CtaOrder(g_cta_order.load()); }
BackwardDq last_backward_dq() { return BackwardDq(g_last_backward_dq.load()); }
bool stream_overlap() { return g_overlap.load(); }

ForwardResult attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const BranchSpec& spec) {
  AttnParams p = make_params(q, k, v, spec);
  c10::cuda::CUDAGuard guard(q.device());
  ForwardResult r;
  r.o = new_output({q.size(0), q.size(1), q.size(2), v.size(3)}, q.options());
  r.lse = new_output({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
  p.o = r.o.data_ptr();
  p.lse_out = r.lse.data_ptr<float>();
  launch_attention_fwd(spec.branch, q.scalar_type(), p);
  return r;
}

Gradients attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout_in,
                             const BranchSpec& spec) {
  AttnParams p = make_params(q, k, v, spec);
  c10::cuda::CUDAGuard guard(q.device());
  // The layer may run a branch on a stream of its own (set_stream_overlap):
  // its backward then reads tensors made on another stream.
  for (const at::Tensor* t : {&q, &k, &v, &o, &lse, &dout_in}) record_use(*t, c10::cuda::getCurrentCUDAStream());
  const at::Tensor dout = dout_in.to(q.scalar_type()).contiguous();
  TORCH_CHECK(dout.sizes() == o.sizes(), branch_name(spec.branch), ": grad ", dout.sizes(),
              " does not match the output ", o.sizes());
  TORCH_CHECK(lse.scalar_type() == at::kFloat && lse.is_contiguous() &&
                  lse.sizes() == at::IntArrayRef({q.size(0), q.size(1), q.size(2)}),
              branch_name(spec.branch), ": lse must be contiguous float32 [B,S,H]");
  // delta = rowsum(dO * O) in fp32: the softmax-backward term of every row,
  // from the kernel that made dO when it offered it (row_delta.h), else here.
  at::Tensor delta = take_row_delta(dout_in, o);
  if (delta.defined()) {
    TORCH_CHECK(delta.scalar_type() == at::kFloat && delta.is_contiguous() && delta.sizes() == lse.sizes(),
                branch_name(spec.branch), ": the offered delta is ", delta.sizes(), " ", delta.scalar_type(),
                ", not contiguous float32 ", lse.sizes());
    record_use(delta, c10::cuda::getCurrentCUDAStream());
  } else {
    delta = row_dot_fp32(dout, o.contiguous());
  }
  Gradients g;
  g.dq = new_output_like(q);
  g.dk = new_output_like(k);
  g.dv = new_output_like(v);
  p.dout = dout.data_ptr();
  p.lse = lse.data_ptr<float>();
  p.delta = delta.data_ptr<float>();
  p.dq_out = g.dq.data_ptr(), p.dk_out = g.dk.data_ptr(), p.dv_out = g.dv.data_ptr();
  // BackwardDq::atomic / slots: the dk/dv kernel makes dq where it can
  // (dq_done); the dq kernel below then has nothing left to do.
  p.dq_in_dkdv = spec.dq != BackwardDq::kernel;
  p.dq_slots = spec.dq == BackwardDq::slots;
  // The selected branch's reverse index, read by dk/dv and by KeyOuter's dq
  // (selected_key_outer.cu), on the caller's stream before the fork.
  ReverseIndex rev;  // kept alive until the launches are queued (stream-ordered)
  if (spec.branch == Branch::Selected) {
    rev = reverse_index(spec.block_idx, spec.sel_block, p.n_blocks);
    p.rev_query = rev.query.data_ptr<int>();
    p.rev_offset = rev.offset.data_ptr<int64_t>();
    p.rev_slot = rev.slot.data_ptr<int>();
  }
  // dk/dv first, on a forked stream when overlapping: its CTAs take the GPU
  // first and dq's fill in as they finish. Every tensor the side stream reads
  // (the reverse index too) was made on the caller's stream before the fork,
  // and the caller's stream joins before anything queued after this call, so
  // none of them is reused early; the side stream's own temporaries (dk/dv
  // partials) are freed onto it.
  std::optional<ForkedStream> fork;
  std::optional<c10::cuda::CUDAStreamGuard> on_side;
  if (g_overlap.load()) {
    fork.emplace(q.get_device(), Lane::kernel_pair);
    on_side.emplace(fork->side());
  }
  launch_attention_bwd_dkdv(spec.branch, q.scalar_type(), p);
  on_side.reset();  // back on the caller's stream
  g_last_backward_dq.store(int(!p.dq_done ? BackwardDq::kernel : p.dq_slots ? BackwardDq::slots : BackwardDq::atomic));
  if (!p.dq_done) launch_attention_bwd_dq(spec.branch, q.scalar_type(), p);
  if (fork) fork->join();
  return g;
}

}  // namespace nsa::cuda
