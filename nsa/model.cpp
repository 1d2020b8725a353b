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
    // of the two GEMMs' input gradients.
    const at::Tensor w = at::cat({b.w_gate.to(compute), b.w_up.to(compute)}, 1);
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

namespace {
// fn(t, cast): every weight of w, and whether the forward casts it to the
// compute dtype (all but the norm weights).
template <typename Fn>
void for_each_weight(ModelWeights& w, Fn&& fn) {
  fn(w.embed, true);
  for (auto& b : w.blocks) {
    fn(b.norm1, false);
    fn(b.norm2, false);
    const auto cast = [&](const std::string&, at::Tensor& t) { fn(t, true); };
    if (b.attn.wq.defined()) b.attn.for_each(cast);
    if (b.dense.wq.defined()) b.dense.for_each(cast);
    fn(b.w_gate, true);
    fn(b.w_up, true);
    fn(b.w_down, true);
  }
  fn(w.final_norm, false);
  fn(w.head, true);
}
}  // namespace

void Model::keep_compute_copies(at::ScalarType dtype) {
  TORCH_CHECK(dtype == at::kBFloat16 || dtype == at::kHalf, "keep_compute_copies: ", dtype, " is not 16-bit");
  TORCH_CHECK(w_.head.scalar_type() == at::kFloat, "keep_compute_copies: parameters are ", w_.head.scalar_type(),
              ", not fp32 master weights");
  if (keeps_compute_copies()) return;
  copy_w_ = w_;
  for_each_weight(copy_w_, [&](at::Tensor& t, bool cast) {
    if (!cast) return;
    masters_.push_back(t);
    t = t.detach().to(dtype).requires_grad_(true);
    copies_.push_back(t);
  });
}

void Model::drop_copy_grads() {
  for (auto& c : copies_) c.mutable_grad() = at::Tensor();
}

void Model::gather_copy_grads() {
  std::vector<at::Tensor> dst, src;
  for (size_t i = 0; i < copies_.size(); ++i) {
    const at::Tensor& g = copies_[i].grad();
    if (!g.defined()) continue;
    at::Tensor& pg = masters_[i].mutable_grad();
    if (!pg.defined()) pg = at::empty_like(masters_[i]);
    dst.push_back(pg);
    src.push_back(g);
  }
  at::NoGradGuard ng;
  if (!dst.empty()) at::_foreach_copy_(dst, src);
}

const ModelWeights& Model::weights_for(at::ScalarType compute) {
  if (copies_.empty() || copies_.front().scalar_type() != compute) return w_;
  at::NoGradGuard ng;
  at::_foreach_copy_(copies_, masters_);
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
