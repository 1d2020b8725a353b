// The sequential prefill on the GPU (NSA_PREFILL_BATCHED=0, NSA_USE_CUDA_DECODE=1).
//
// Forward: token by token, the decode kernels (decode_attention.h) — the path a
// deployed model takes for each new token — over the layer's whole-sequence
// keys and values as the caches, the current length t + 1 read from device
// memory. Four launches per token and no host round trip; the compressed
// blocks are computed once (compress_sequence) and the kernels see only those
// complete by t, which is exactly the decode cache's emission rule.
//
// Backward: the gradient of that forward. Each token's output depends on its
// own query, the keys it saw and the blocks it chose, so the tokens' backward
// passes are independent given what the forward saved (outputs, logsumexps,
// choices): the branch kernels' backward (attention_backward) computes all of
// them at once, with deterministic summation. Autograd through the ATen
// decode step instead records ~250 operators per token and layer and runs as
// many backward (the seed matrix's sequential cells: minutes per step);
// NSA_USE_CUDA_DECODE=0 keeps that route, and the sequential mutations use it.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

#include "nsa/cuda/decode_attention.h"
#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/nsa_paths.h"

namespace nsa::cuda {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int kCmp = 0, kSlc = 1, kWin = 2;  // nsa::Branch order: cmp, slc, win

struct SequentialDecodeFn : torch::autograd::Function<SequentialDecodeFn> {
  // q [B,S,H,dk]; kc/vc [B,n_cmp,G,·]; ks/vs and kw/vw [B,S,G,·]; contiguous,
  // one dtype. Returns o_cmp, o_slc, o_win [B,S,H,dv] and block_idx int32
  // [B,S,G,n] (no gradient).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                               const at::Tensor& ks, const at::Tensor& vs, const at::Tensor& kw, const at::Tensor& vw,
                               const DecodeHyper& hp, const TokenHook* after_token) {
    const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = ks.size(2), dv = vs.size(3);
    // Token-major buffers: one decode step reads token t's queries and writes
    // its outputs as contiguous blocks of these, so nothing is copied per token.
    const at::Tensor q_tm = q.transpose(0, 1).contiguous();  // [S,B,H,dk]
    at::Tensor o_tm = at::empty({3, S, B, 1, H, dv}, q.options());
    at::Tensor lse_tm = at::empty({3, S, B, H}, q.options().dtype(at::kFloat));
    at::Tensor idx_tm = at::empty({S, B, 1, G, hp.n_sel}, q.options().dtype(at::kInt));
    const at::Tensor lens = at::arange(1, S + 1, q.options().dtype(at::kInt));  // token t's length, on the device

    DecodeCaches c;
    c.k_cmp = kc, c.v_cmp = vc, c.k_slc = ks, c.v_slc = vs, c.k_win = kw, c.v_win = vw;
    c.q = q_tm.select(0, 0).unsqueeze(1);
    c.len = lens.narrow(0, 0, 1);
    const DecodePlan plan = plan_decode(c, hp);
    DecodeWorkspace ws = make_decode_workspace(c, plan);
    for (int64_t t = 0; t < S; ++t) {
      c.q = q_tm.select(0, t).unsqueeze(1);  // [B,1,H,dk]
      c.len = lens.narrow(0, t, 1);
      DecodeResult r;
      r.o_cmp = o_tm.select(0, kCmp).select(0, t), r.o_slc = o_tm.select(0, kSlc).select(0, t);
      r.o_win = o_tm.select(0, kWin).select(0, t);
      r.lse_cmp = lse_tm.select(0, kCmp).select(0, t), r.lse_slc = lse_tm.select(0, kSlc).select(0, t);
      r.lse_win = lse_tm.select(0, kWin).select(0, t);
      r.block_idx = idx_tm.select(0, t);
      decode_attention_out(c, hp, plan, ws, r);
      if (after_token && *after_token) (*after_token)(t, r.o_win.view({B, H, dv}));
    }
    // Back to the layer's [B,S,...] layouts.
    const auto seq_major = [](const at::Tensor& x) { return x.transpose(0, 1).contiguous(); };
    at::Tensor o[3], lse[3];
    for (int b = 0; b < 3; ++b) o[b] = seq_major(o_tm[b].squeeze(2)), lse[b] = seq_major(lse_tm[b]);
    const at::Tensor block_idx = seq_major(idx_tm.squeeze(2));

    ctx->save_for_backward({q, kc, vc, ks, vs, kw, vw, o[kCmp], o[kSlc], o[kWin], block_idx});
    ctx->saved_data["lse_cmp"] = lse[kCmp];
    ctx->saved_data["lse_slc"] = lse[kSlc];
    ctx->saved_data["lse_win"] = lse[kWin];
    ctx->saved_data["cmp_block"] = hp.cmp_block;
    ctx->saved_data["cmp_stride"] = hp.cmp_stride;
    ctx->saved_data["sel_block"] = hp.sel_block;
    ctx->saved_data["window"] = hp.window;
    ctx->saved_data["scale"] = hp.scale;
    ctx->mark_non_differentiable({block_idx});
    return {o[kCmp], o[kSlc], o[kWin], block_idx};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &block_idx = s[10];
    const double scale = ctx->saved_data["scale"].toDouble();
    // Per branch: its keys, values, output, logsumexp and index rule.
    struct Part {
      at::Tensor k, v, o, lse;
      BranchSpec spec;
    } part[3];
    part[kCmp] = {s[1], s[2], s[7], ctx->saved_data["lse_cmp"].toTensor(), {}};
    part[kCmp].spec.branch = Branch::Compressed;
    part[kCmp].spec.cmp_block = ctx->saved_data["cmp_block"].toInt();
    part[kCmp].spec.cmp_stride = ctx->saved_data["cmp_stride"].toInt();
    part[kSlc] = {s[3], s[4], s[8], ctx->saved_data["lse_slc"].toTensor(), {}};
    part[kSlc].spec.branch = Branch::Selected;
    part[kSlc].spec.sel_block = ctx->saved_data["sel_block"].toInt();
    part[kSlc].spec.block_idx = block_idx;
    part[kWin] = {s[5], s[6], s[9], ctx->saved_data["lse_win"].toTensor(), {}};
    part[kWin].spec.branch = Branch::Window;
    part[kWin].spec.window = ctx->saved_data["window"].toInt();

    at::Tensor dq;
    at::Tensor dk[3], dv[3];
    for (int b = 0; b < 3; ++b) {
      Part& p = part[b];
      p.spec.scale = scale;
      // No gradient into this output, or no key (S < l: no compressed block): nothing flows.
      if (!grads[b].defined() || p.k.size(1) == 0) continue;
      Gradients g = attention_backward(q, p.k, p.v, p.o, p.lse, grads[b].contiguous(), p.spec);
      dq = dq.defined() ? dq + g.dq : g.dq;
      dk[b] = g.dk, dv[b] = g.dv;
    }
    // One gradient per forward argument: q, kc, vc, ks, vs, kw, vw, hp, after_token.
    return {dq, dk[kCmp], dv[kCmp], dk[kSlc], dv[kSlc], dk[kWin], dv[kWin], at::Tensor(), at::Tensor()};
  }
};

bool cuda_sequential(const Projected& pj, const NsaWeights& w, const ModelConfig& c, const Runtime& rt,
                     const TokenHook& after_token, BranchOutputs& out) {
  const auto& P = c.nsa;
  // The decode kernels' shapes (decode_attention.h); otherwise decline: the
  // ATen route runs and reports itself.
  const auto dt = pj.q.scalar_type();
  const bool fits = (dt == at::kFloat || dt == at::kHalf || dt == at::kBFloat16) && c.d_k % 16 == 0 &&
                    c.d_v % 16 == 0 && c.d_k <= 256 && c.d_v <= 256;
  if (!kernels_available() || !fits) return false;
  DecodeHyper hp;
  hp.cmp_block = P.cmp_block, hp.cmp_stride = P.cmp_stride, hp.sel_block = P.sel_block;
  hp.n_sel = P.sel_count, hp.window = P.window, hp.scale = 1.0 / std::sqrt(double(c.d_k));
  const at::Tensor kc = compress_sequence(pj.k[0], w.phi_k, P), vc = compress_sequence(pj.v[0], w.phi_v, P);
  variable_list r = SequentialDecodeFn::apply(pj.q.contiguous(), kc, vc, pj.k[1].contiguous(), pj.v[1].contiguous(),
                                              pj.k[2].contiguous(), pj.v[2].contiguous(), hp, &after_token);
  for (int b = 0; b < 3; ++b) out.o[b] = r[b];
  out.block_idx = r[3].to(at::kLong);
  if (rt.observer)
    for (const char* branch : {"cmp", "slc", "win"}) rt.observer->route(branch, "cuda.decode");
  return true;
}

}  // namespace

void register_sequential_prefill() { register_cuda_sequential(&cuda_sequential); }

}  // namespace nsa::cuda
