#pragma once
// One training step: forward, backward, clip, optimizer — with fp32 master
// weights (parameters fp32, compute in 16-bit) or pure 16-bit parameters, and
// dynamic loss scaling for fp16.
#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nsa/model.h"
#include "nsa/optim.h"
#include "nsa/step_graph.h"

namespace nsa {

enum class Precision { fp32, bf16, fp16 };
Precision precision_from_string(const std::string& s);  // throws std::invalid_argument
at::ScalarType compute_dtype(Precision p);

struct TrainConfig {
  int steps = 8;
  double lr = 3e-3;
  int warmup_steps = 2;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  Precision precision = Precision::fp32;
  bool master_weights = true;
};

struct StepStats {
  double loss = 0.0;       // unscaled; NaN when non-finite
  double grad_norm = 0.0;  // before clipping; NaN/inf when non-finite
  double lr = 0.0;
  double loss_scale = 1.0;
  bool skipped = false;    // fp16 overflow: optimizer step skipped
};

// Data parallelism's hook into a step (nsa/dist/data_parallel.h): after
// backward, before the gradient norm, clipping and the optimizer, `reduce`
// averages the gradients and the loss across ranks; `after_update` runs after
// the optimizer. With none set a step is single-process, as before.
class GradSync {
 public:
  virtual ~GradSync() = default;
  virtual void reduce(int step, std::vector<at::Tensor>& grads, at::Tensor& loss) = 0;
  virtual void after_update(int /*step*/, Model& /*model*/) {}
};

class Trainer {
 public:
  Trainer(Model& model, TrainConfig cfg);
  // Runs step `step` (1-based) on `batch` [B,S+1] (already on the model's device).
  // may_replay: nothing watches inside this step, so it may run as a replay of
  // a captured CUDA graph (nsa/step_graph.h) when the cell allows graphs.
  StepStats step(int step, const at::Tensor& batch, Runtime& rt, bool may_replay = false);

  // The step's device work once the batch is known, without a host sync:
  // gradients zeroed in place (those that exist), forward, backward, gradient
  // all-reduce (data parallel), gradient norm, clipping and the AdamW update.
  // Returns [loss, gradient norm before clipping] as an fp64 device tensor.
  // The eager step (without loss scaling) and the captured graph both run it,
  // so a replay computes what an eager step computes.
  at::Tensor device_step(int step, const at::Tensor& batch, Runtime& rt);
  // Forward and backward only (no update): the warm-up before a capture.
  void forward_backward(const at::Tensor& batch, Runtime& rt);
  void zero_grads();  // in place, keeping each gradient's storage

  // How the last step ran; why steps run eagerly ("" while graphs may run);
  // the step that captured the graph (0: none) and the replays since.
  StepExec last_exec() const { return last_exec_; }
  const std::string& graph_off_reason() const { return graph_off_; }
  int graph_captured_at() const { return captured_at_; }
  int graph_replays() const { return replays_; }
  // Why the steps cast each weight ("" once they read copies; "not decided"
  // before the first step).
  const std::string& weight_copies_off_reason() const { return copies_off_; }

  at::ScalarType param_dtype() const;
  at::ScalarType compute() const { return compute_dtype(cfg_.precision); }
  const TrainConfig& config() const { return cfg_; }
  const AdamW& optimizer() const { return *opt_; }
  const LossScaler& scaler() const { return scaler_; }
  Model& model() { return model_; }
  void set_grad_sync(GradSync* sync) { sync_ = sync; }

 private:
  Model& model_;
  TrainConfig cfg_;
  std::unique_ptr<AdamW> opt_;
  LossScaler scaler_;
  GradSync* sync_ = nullptr;

  StepStats scaled_step(int step, const at::Tensor& batch, Runtime& rt, StepStats st);
  std::optional<StepStats> try_graph(int step, const at::Tensor& batch, Runtime& rt, StepStats st);
  at::Tensor loss_of(const at::Tensor& batch, Runtime& rt);
  void backward_of(const at::Tensor& loss, Runtime& rt);
  std::pair<at::Tensor, std::vector<at::Tensor>> loss_and_grads(int step, const at::Tensor& batch, Runtime& rt);
  std::vector<at::Tensor> grads() const;

  std::unique_ptr<StepGraph> graph_;
  bool graph_checked_ = false;
  bool copies_checked_ = false;  // the first step decides on compute copies
  std::string copies_off_ = "not decided";
  std::string graph_off_;
  StepExec last_exec_ = StepExec::eager;
  int eager_steps_ = 0, captured_at_ = 0, replays_ = 0;
};

// Eager steps before a capture: the first pays for lazy initialisation
// (cuBLAS handles, kernel modules), the capture needs a step's gradients.
inline constexpr int kEagerStepsBeforeGraph = 2;

// The parameter dtype a TrainConfig implies (fp32 with master weights).
at::ScalarType param_dtype_for(const TrainConfig& c);

// Why a cell's steps cast each weight rather than read compute-dtype copies of
// the weights (Model::keep_compute_copies); nullptr: they read copies. The
// first step decides.
const char* compute_copies_blocker(const TrainConfig& c, const Runtime& rt);

}  // namespace nsa
