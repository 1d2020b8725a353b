#include "nsa/model.h"

#include <ATen/core/grad_mode.h>

#include "nsa/faults.h"

#include <chrono>
#include <tuple>
#include <thread>
#include <vector>

namespace nsa {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  // On a GPU, ATen's fused kernel (statistics in fp32, one kernel each way):
  // the composite below is ~10 kernels forward and ~13 backward over fp32
  // copies of x: ~0.7 ms per norm and layer, ~17 ms of an m7c_125m step (H100).
  if (x.is_cuda())
    return std::get<0>(at::_fused_rms_norm(x, {x.size(-1)}, weight.to(x.scalar_type()), eps));
  // Statistics in fp32 whatever the compute dtype.
  auto xf = x.to(accum_dtype(x.scalar_type()));
  auto y = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);
  return (y * weight.to(y.scalar_type())).to(x.scalar_type());
}

namespace {
SwigluFn g_swiglu = nullptr;
AddRmsNormFn g_add_rms_norm = nullptr;
}  // namespace

void register_swiglu(SwigluFn fn) { g_swiglu = fn; }
void register_add_rms_norm(AddRmsNormFn fn) { g_add_rms_norm = fn; }

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                               double eps, const Runtime& rt) {
  if (g_add_rms_norm && x.is_cuda() && rt.fused_norm) {
    auto out = g_add_rms_norm(x, delta, weight, eps);
    if (out.first.defined()) {
      if (rt.observer) rt.observer->route("norm", "cuda.add_rms_norm");
      return out;
    }
  }
  if (rt.observer) rt.observer->route("norm", "aten");
  auto s = x + delta;
  return {s, rms_norm(s, weight, eps)};
}

at::Tensor swiglu_mlp(const at::Tensor& h, const BlockWeights& b, at::ScalarType compute, const Runtime& rt) {
  auto report = [&](const char* impl) {
    if (rt.observer) rt.observer->route("mlp", impl);
  };
  if (g_swiglu && h.is_cuda() && rt.fused_mlp) {
    // One [D, 2F] weight per step: two casts and a copy of the small weights (the
    // cat's backward is two views) buy one GEMM each way instead of two, and no sum
    // of the two GEMMs' input gradients. The 16-bit copies keep it whole.
    const at::Tensor w = b.w_gate_up.defined() ? b.w_gate_up.to(compute)
                                               : at::cat({b.w_gate.to(compute), b.w_up.to(compute)}, 1);
    report("cuda.swiglu");
    return at::matmul(g_swiglu(at::matmul(h, w)), b.w_down.to(compute));
  }
  report("aten");
  return at::matmul(at::silu(at::matmul(h, b.w_gate.to(compute))) * at::matmul(h, b.w_up.to(compute)),
                    b.w_down.to(compute));
}

Model::Model(ModelConfig cfg, const at::TensorOptions& o) : cfg_(std::move(cfg)) {
  const int64_t D = cfg_.d_model, V = cfg_.vocab, F = cfg_.ffn_hidden_resolved();
  auto normal = [&](std::vector<int64_t> shape, double std) { return (at::randn(shape, o) * std).requires_grad_(); };
  auto ones = [&](int64_t n) { return at::ones({n}, o).requires_grad_(); };
  w_.embed = normal({V, D}, 0.02);
  params_.emplace_back("embed", w_.embed);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    BlockWeights b;
    b.norm1 = ones(D);
    b.norm2 = ones(D);
    if (is_dense()) b.dense = init_dense_weights(cfg_, o);
    else b.attn = init_nsa_weights(cfg_, o);
    b.w_gate = normal({D, F}, 0.02);
    b.w_up = normal({D, F}, 0.02);
    // Residual-path outputs scaled down by depth (GPT-2 style) so deep stacks start stable.
    b.w_down = normal({F, D}, 0.02 / std::sqrt(2.0 * cfg_.n_layers));
    std::string p = "layers." + std::to_string(l) + ".";
    params_.emplace_back(p + "norm1", b.norm1);
    for (auto& [n, t] : is_dense() ? b.dense.named() : b.attn.named()) params_.emplace_back(p + "attn." + n, t);
    params_.emplace_back(p + "norm2", b.norm2);
    params_.emplace_back(p + "mlp.w_gate", b.w_gate);
    params_.emplace_back(p + "mlp.w_up", b.w_up);
    params_.emplace_back(p + "mlp.w_down", b.w_down);
    w_.blocks.push_back(std::move(b));
  }
  w_.final_norm = ones(D);
  w_.head = normal({D, V}, 0.02);
  params_.emplace_back("final_norm", w_.final_norm);
  params_.emplace_back("head", w_.head);
}

void Model::keep_compute_copies(at::ScalarType dtype) {
  TORCH_CHECK(dtype == at::kBFloat16 || dtype == at::kHalf, "keep_compute_copies: ", dtype, " is not 16-bit");
  TORCH_CHECK(w_.head.scalar_type() == at::kFloat, "keep_compute_copies: parameters are ", w_.head.scalar_type(),
              ", not fp32 master weights");
  if (keeps_compute_copies()) return;
  copy_w_ = w_;
  // The copies are made here with ATen's cast; every refresh after this writes
  // the same values (copy_spans rounds as ATen does).
  const auto lone = [&](at::Tensor& t) {
    leaves_.push_back(t.detach().to(dtype).requires_grad_(true));
    pairs_.push_back({t, leaves_.back().detach(), leaves_.size() - 1, -1});
    t = leaves_.back();
  };
  // One leaf for weights the forward concatenates along columns; each weight's
  // copy is a column slice of it, written through a detached view (sharing the
  // leaf's version counter). The weight's own field keeps the fp32 parameter:
  // a path that reads the weight alone (the MLP's ATen route, which multiplies
  // by the gate and the up weight one at a time) casts it and its gradient
  // reaches the parameter directly, as without copies (the leaf then gets none,
  // and gather_copy_grads leaves that parameter's gradient alone). No view of a
  // leaf that autograd tracks is kept between steps: it would keep the leaf's
  // gradient accumulator alive, stamped with the stream of the step that made
  // it, and a CUDA graph captured on another stream would then wait on that one.
  const auto joined = [&](std::initializer_list<at::Tensor*> parts) {
    std::vector<at::Tensor> cast;
    for (at::Tensor* p : parts) cast.push_back(p->detach().to(dtype));
    leaves_.push_back(at::cat(cast, 1).requires_grad_(true));
    const at::Tensor slices = leaves_.back().detach();
    int64_t c0 = 0;
    for (at::Tensor* p : parts) {
      const int64_t n = p->size(1);
      pairs_.push_back({*p, slices.narrow(1, c0, n), leaves_.size() - 1, c0});
      c0 += n;
    }
    return leaves_.back();
  };
  lone(copy_w_.embed);
  for (BlockWeights& b : copy_w_.blocks) {
    if (b.attn.wq.defined()) {
      NsaWeights& a = b.attn;
      a.w_proj = joined({&a.wq, &a.wk[0], &a.wk[1], &a.wk[2], &a.wv[0], &a.wv[1], &a.wv[2]});
      a.for_each([&](const std::string& name, at::Tensor& t) {
        if (name == "wq" || name.rfind("wk.", 0) == 0 || name.rfind("wv.", 0) == 0) return;  // joined above
        lone(t);
      });
    }
    if (b.dense.wq.defined()) {
      DenseWeights& d = b.dense;
      d.w_qkv = joined({&d.wq, &d.wk, &d.wv});
      lone(d.wo);
    }
    b.w_gate_up = joined({&b.w_gate, &b.w_up});
    lone(b.w_down);
  }
  lone(copy_w_.head);
}

namespace {
CopySpansFn g_copy_spans = nullptr;

// dst[i] = src[i] (converted), all pairs: one kernel where the hook applies,
// else a copy_ per pair. Either way each destination's version moves on, so
// autograd still catches a forward whose saved copies a later refresh changed.
void copy_pairs(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  at::NoGradGuard ng;
  if (dst.empty()) return;
  if (g_copy_spans && dst.front().is_cuda()) {
    g_copy_spans(dst, src);
    for (const at::Tensor& d : dst) d.unsafeGetTensorImpl()->bump_version();
    return;
  }
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}
}  // namespace

void register_copy_spans(CopySpansFn fn) { g_copy_spans = fn; }

void Model::drop_copy_grads() {
  for (auto& leaf : leaves_) leaf.mutable_grad() = at::Tensor();
}

void Model::gather_copy_grads() {
  std::vector<at::Tensor> dst, src;
  for (const CopyPair& p : pairs_) {
    const at::Tensor& g = leaves_[p.leaf].grad();
    if (!g.defined()) continue;
    at::Tensor& pg = p.master.mutable_grad();
    if (!pg.defined()) pg = at::empty_like(p.master);
    dst.push_back(pg);
    src.push_back(p.col0 < 0 ? g : g.narrow(1, p.col0, p.master.size(1)));
  }
  copy_pairs(dst, src);
}

const ModelWeights& Model::weights_for(at::ScalarType compute) {
  if (pairs_.empty() || leaves_.front().scalar_type() != compute) return w_;
  std::vector<at::Tensor> dst, src;
  for (const CopyPair& p : pairs_) dst.push_back(p.copy), src.push_back(p.master);
  copy_pairs(dst, src);
  return copy_w_;
}

const NsaWeights& Model::attention_weights(int layer) const {
  TORCH_CHECK(!is_dense(), "attention_weights: layer ", layer, " is dense attention, not NSA");
  return w_.blocks.at(layer).attn;
}

at::Tensor Model::forward(const at::Tensor& tokens, at::ScalarType compute, const Runtime& rt) {
  const ModelWeights& w = weights_for(compute);
  auto x = w.embed.to(compute).index_select(0, tokens.flatten()).view({tokens.size(0), tokens.size(1), cfg_.d_model});
  // h is the normed stream the next sublayer reads: each residual add is fused
  // with the norm after it (add_rms_norm), the next block's norm1 or the final norm.
  at::Tensor h = rms_norm(x, cfg_.n_layers > 0 ? w.blocks[0].norm1 : w.final_norm, cfg_.norm_eps);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    Phase phase(rt, "layer", l);
    auto& b = w.blocks[l];
    {
      Phase attn(rt, "attention", l);
      auto a = is_dense() ? dense_attention(b.dense, h, cfg_) : nsa_attention(b.attn, h, cfg_, rt, l);
      std::tie(x, h) = add_rms_norm(x, a, b.norm2, cfg_.norm_eps, rt);
    }
    const at::Tensor& next_norm = l + 1 < cfg_.n_layers ? w.blocks[l + 1].norm1 : w.final_norm;
    std::tie(x, h) = add_rms_norm(x, swiglu_mlp(h, b, compute, rt), next_norm, cfg_.norm_eps, rt);
    if (rt.observer && rt.observer->wants_tensors()) rt.observer->tensor("block_out", l, -1, x.detach());
  }
  return at::matmul(h, w.head.to(compute));
}

// Planted faults of the training loop (nsa/faults.h), all at the loss: step 3
// is past the warm-up steps, so each shows against clean steps before it.
namespace {
void plant_loss_faults(at::Tensor& logits, const Runtime& rt) {
  constexpr int kFaultStep = 3;
  if (fault_on(Fault::loss_blowup) && rt.step == kFaultStep) logits = logits * 1e30;
  if (fault_on(Fault::backward_stall) && rt.step == kFaultStep && logits.requires_grad())
    logits.register_hook([](const at::Tensor& g) {
      std::this_thread::sleep_for(std::chrono::seconds(30));
      return g;
    });
  if (fault_on(Fault::huge_alloc) && rt.step == kFaultStep)
    logits = logits + at::empty({int64_t(1) << 40}, logits.options().dtype(at::kByte)).sum();
  if (fault_on(Fault::tensor_leak)) {
    static std::vector<at::Tensor> kept;  // never cleared: the leak
    kept.push_back(logits);
  }
}
}  // namespace

at::Tensor Model::loss(const at::Tensor& batch, at::ScalarType compute, const Runtime& rt) {
  const int64_t S = batch.size(1) - 1;
  auto inputs = batch.narrow(1, 0, S), targets = batch.narrow(1, 1, S);
  auto logits = forward(inputs, compute, rt).to(accum_dtype(compute));
  plant_loss_faults(logits, rt);
  return at::cross_entropy_loss(logits.reshape({-1, cfg_.vocab}), targets.reshape({-1}));
}

}  // namespace nsa
