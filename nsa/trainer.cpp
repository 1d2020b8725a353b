#include "nsa/trainer.h"

#include <torch/csrc/autograd/anomaly_mode.h>

#include <cmath>
#include <stdexcept>

#include "nsa/faults.h"
#include "nsa/runtime.h"

namespace nsa {

Precision precision_from_string(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp16") return Precision::fp16;
  throw std::invalid_argument("unknown precision '" + s + "' (expected fp32, bf16 or fp16)");
}

at::ScalarType compute_dtype(Precision p) {
  switch (p) {
    case Precision::fp32: return at::kFloat;
    case Precision::bf16: return at::kBFloat16;
    case Precision::fp16: return at::kHalf;
  }
  return at::kFloat;
}

at::ScalarType param_dtype_for(const TrainConfig& c) {
  return c.master_weights ? at::kFloat : compute_dtype(c.precision);
}

Trainer::Trainer(Model& model, TrainConfig cfg)
    : model_(model), cfg_(cfg), scaler_(cfg.precision == Precision::fp16) {
  std::vector<at::Tensor> params;
  for (auto& [name, p] : model_.parameters()) params.push_back(p);
  opt_ = std::make_unique<AdamW>(params, AdamWConfig{0.9, 0.95, 1e-8, cfg_.weight_decay});
}

at::ScalarType Trainer::param_dtype() const { return param_dtype_for(cfg_); }

namespace {

// ‖g‖₂ over every gradient in one multi-tensor pass, summed in fp32 whatever
// the gradients' dtype (a 16-bit sum of squares overflows on ordinary values);
// an fp64 0-d device tensor.
at::Tensor grad_norm(const std::vector<at::Tensor>& grads, const at::TensorOptions& opts) {
  at::NoGradGuard ng;
  if (grads.empty()) return at::zeros({}, opts.dtype(at::kDouble));
  return at::stack(at::_foreach_norm(grads, 2, at::kFloat)).pow(2).sum().to(at::kDouble).sqrt();
}

void fill_stats(StepStats& st, const at::Tensor& device_stats, double loss_scale) {
  const at::Tensor h = device_stats.to(at::kCPU);  // the step's one host sync
  st.loss = h[0].item<double>();
  st.grad_norm = h[1].item<double>() / loss_scale;
}

}  // namespace

std::vector<at::Tensor> Trainer::grads() const {
  std::vector<at::Tensor> out;
  for (auto& [name, p] : model_.parameters())
    if (p.grad().defined()) out.push_back(p.grad());
  return out;
}

void Trainer::zero_grads() {
  auto g = grads();
  if (!g.empty()) at::_foreach_zero_(g);
}

at::Tensor Trainer::loss_of(const at::Tensor& batch, Runtime& rt) {
  Phase phase(rt, "forward");
  return model_.loss(batch, compute(), rt);
}

void Trainer::backward_of(const at::Tensor& loss, Runtime& rt) {
  Phase phase(rt, "backward");
  const bool anomaly = rt.flags.get_bool("NSA_DETECT_ANOMALY");
  const bool copies = model_.keeps_compute_copies();
  if (copies) model_.drop_copy_grads();
  torch::autograd::AnomalyMode::set_enabled(anomaly);
  (scaler_.enabled() ? loss * scaler_.scale() : loss).backward();
  torch::autograd::AnomalyMode::set_enabled(false);
  if (copies) model_.gather_copy_grads();
}

// What keeps a cell casting each weight instead of reading compute-dtype copies
// (Model::keep_compute_copies), first match wins. Copies give the casts'
// gradients to the bit only where each weight is read once per forward.
namespace {
struct CopiesBlocker {
  bool (*applies)(const TrainConfig&, const Runtime&);
  const char* why;
};
const CopiesBlocker kCopiesBlockers[] = {
    {[](const TrainConfig&, const Runtime& rt) { return !rt.flags.get_bool("NSA_WEIGHT_COPIES"); },
     "switched off (NSA_WEIGHT_COPIES=0)"},
    {[](const TrainConfig& c, const Runtime&) { return compute_dtype(c.precision) == at::kFloat; },
     "fp32 compute reads the parameters as they are"},
    {[](const TrainConfig& c, const Runtime&) { return !c.master_weights; },
     "16-bit parameters (master_weights: false): nothing to cast"},
    {[](const TrainConfig&, const Runtime& rt) { return !rt.prefill_batched; },
     "the sequential prefill reads each weight once per token (the fp32 parameters sum those gradients in fp32)"},
    {[](const TrainConfig&, const Runtime& rt) { return rt.force_reference; },
     "the per-query reference path (NSA_FORCE_PARITY=1) reads each weight once per query"},
};
}  // namespace

const char* compute_copies_blocker(const TrainConfig& c, const Runtime& rt) {
  for (const auto& b : kCopiesBlockers)
    if (b.applies(c, rt)) return b.why;
  return nullptr;
}

void Trainer::forward_backward(const at::Tensor& batch, Runtime& rt) { backward_of(loss_of(batch, rt), rt); }

// Forward, backward and (data parallel) the gradients' all-reduce: the loss
// and the gradients the update will use.
std::pair<at::Tensor, std::vector<at::Tensor>> Trainer::loss_and_grads(int step, const at::Tensor& batch, Runtime& rt) {
  at::Tensor loss = loss_of(batch, rt);
  backward_of(loss, rt);
  std::vector<at::Tensor> g = grads();
  if (sync_) {
    Phase phase(rt, "allreduce");
    sync_->reduce(step, g, loss);
  }
  return {loss, g};
}

at::Tensor Trainer::device_step(int step, const at::Tensor& batch, Runtime& rt) {
  // Existing gradients keep their storage (a captured graph holds their
  // addresses); backward accumulates into them.
  zero_grads();
  auto [loss, g] = loss_and_grads(step, batch, rt);
  Phase phase(rt, "optimizer");
  at::NoGradGuard ng;
  const at::Tensor norm = grad_norm(g, loss.options());
  // Clipping as the divisor AdamW applies to every gradient: (‖g‖ + 1e-6) / clip
  // when the norm is finite and above clip, else 1 (a non-finite norm goes
  // through unclipped and shows in the loss).
  const at::Tensor divisor =
      at::where(at::isfinite(norm) & (norm > cfg_.grad_clip), (norm + 1e-6) / cfg_.grad_clip, at::ones_like(norm))
          .to(at::kFloat);
  opt_->apply(divisor);
  if (sync_) sync_->after_update(step, model_);
  return at::stack({loss.detach().to(at::kDouble), norm});
}

StepStats Trainer::step(int step, const at::Tensor& batch, Runtime& rt, bool may_replay) {
  StepStats st;
  rt.step = step;
  st.lr = lr_at(step, cfg_.warmup_steps, cfg_.steps, cfg_.lr);
  st.loss_scale = scaler_.scale();
  last_exec_ = StepExec::eager;
  if (!copies_checked_) {
    copies_checked_ = true;
    if (const char* why = compute_copies_blocker(cfg_, rt)) copies_off_ = why;
    else model_.keep_compute_copies(compute());
  }
  if (may_replay)
    if (auto replayed = try_graph(step, batch, rt, st)) return *replayed;
  if (scaler_.enabled()) return scaled_step(step, batch, rt, st);
  // Without a graph the gradients are dropped and backward allocates them
  // afresh (no zeroing pass); once a graph holds their addresses they stay.
  if (!graph_)
    for (auto& [name, p] : model_.parameters()) p.mutable_grad() = at::Tensor();
  opt_->schedule(st.lr);
  const at::Tensor stats = device_step(step, batch, rt);
  if (rt.observer) rt.observer->sync_point("loss and grad norm");
  fill_stats(st, stats, 1.0);
  ++eager_steps_;
  return st;
}

// fp16: the loss scaler decides on the host, after backward, whether the step
// is skipped (non-finite gradients at this scale) — so this step syncs before
// the update and is never captured.
StepStats Trainer::scaled_step(int step, const at::Tensor& batch, Runtime& rt, StepStats st) {
  for (auto& [name, p] : model_.parameters()) p.mutable_grad() = at::Tensor();
  auto [loss, g] = loss_and_grads(step, batch, rt);
  Phase phase(rt, "optimizer");
  if (rt.observer) rt.observer->sync_point("loss and grad norm");
  const double scale = scaler_.scale();  // the scale this step's gradients carry
  fill_stats(st, at::stack({loss.detach().to(at::kDouble), grad_norm(g, loss.options())}), scale);
  const double norm = st.grad_norm;
  st.skipped = scaler_.update(std::isfinite(norm));
  ++eager_steps_;
  if (st.skipped) return st;
  // Unscale and clip in one divisor.
  double divisor = scale;
  if (std::isfinite(norm) && norm > cfg_.grad_clip) divisor *= (norm + 1e-6) / cfg_.grad_clip;
  opt_->schedule(st.lr);
  const auto opts = g.empty() ? loss.options() : g.front().options();
  opt_->apply(at::full({}, divisor, opts.dtype(at::kFloat)));
  if (sync_) sync_->after_update(step, model_);
  return st;
}

std::optional<StepStats> Trainer::try_graph(int step, const at::Tensor& batch, Runtime& rt, StepStats st) {
  if (!graph_checked_) {
    graph_checked_ = true;
    GraphSetting s;
    s.cuda = batch.is_cuda();
    s.switched_on = rt.flags.get_bool("NSA_CUDA_GRAPH");
    s.loss_scaling = scaler_.enabled();
    s.fused_optimizer = opt_->fused();
    s.distributed = sync_ != nullptr;
    s.faults = !faults.active_names().empty();
    s.anomaly = rt.flags.get_bool("NSA_DETECT_ANOMALY");
    s.sequential_prefill = !rt.prefill_batched;
    s.capture_available = step_graph_factory() != nullptr;
    if (const char* why = graph_blocker(s)) graph_off_ = why;
  }
  if (!graph_off_.empty() || eager_steps_ < kEagerStepsBeforeGraph) return std::nullopt;
  StepExec exec = StepExec::replay;
  if (!graph_) {
    try {
      Phase phase(rt, "graph capture");
      graph_ = step_graph_factory()(*this, batch, rt);
    } catch (const std::exception& e) {
      graph_off_ = "capture failed at step " + std::to_string(step) + ": " + e.what();
      return std::nullopt;
    }
    captured_at_ = step;
    exec = StepExec::capture;
  }
  if (!graph_->accepts(batch)) return std::nullopt;  // another shape: this step runs eagerly
  opt_->schedule(st.lr);
  at::Tensor stats;
  {
    Phase phase(rt, "graph replay");
    stats = graph_->replay(batch);
    if (rt.observer) rt.observer->sync_point("loss and grad norm");
    fill_stats(st, stats, 1.0);
  }
  ++replays_;
  last_exec_ = exec;
  return st;
}

}  // namespace nsa
