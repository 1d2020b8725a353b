// The training step captured as a CUDA graph (nsa/step_graph.h) against the
// same steps run eagerly: a replay must compute exactly what the eager step
// computes — the eager path (kernels launched one by one from host code) is
// the oracle the capture and replay mechanism is held to.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include <cmath>
#include <cstdlib>

#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"
#include "nsa/data.h"
#include "nsa/determinism.h"
#include "nsa/model.h"
#include "nsa/observer.h"
#include "nsa/test_support.h"
#include "nsa/trainer.h"

namespace nsa::cuda {
namespace {
using namespace nsa::testing;

ModelConfig graph_case() {
  ModelConfig c = tiny();
  c.d_model = 128, c.n_heads = 4, c.n_kv_groups = 2, c.d_k = 64, c.d_v = 64;
  return c;
}

// Deterministic algorithms for one test (nsa/determinism.h, the switch a
// scenario's train.deterministic turns on; ATen's restored after): ATen takes
// its deterministic kernels (or throws, naming an op that has none) and cuBLAS
// a fixed workspace, so two
// eager runs agree bit for bit — and a replay, which launches the same kernels
// on the same data, must agree with them bit for bit too. Without it the
// model's backward is not reproducible run to run (a gradient-norm difference
// of ~1e-3 at step 1 in bf16), and no tolerance would tell a capture bug from
// that noise.
class DeterministicAlgorithms {
 public:
  DeterministicAlgorithms() : was_(at::globalContext().deterministicAlgorithms()) {
    nsa::use_deterministic_algorithms();
  }
  ~DeterministicAlgorithms() { at::globalContext().setDeterministicAlgorithms(was_, false); }

 private:
  bool was_;
};

struct TrainedRun {
  std::vector<double> loss, norm;
  std::vector<StepExec> exec;
  std::vector<at::Tensor> params;
  std::string off_reason;
  int captured_at = 0, replays = 0;
};

// `steps` steps of a fresh model (same seed every call) on the same batches.
// `flag` = `value` for the cell's runtime (a switch the test compares).
TrainedRun train(Precision precision, int steps, bool may_replay, uint64_t seed, const char* flag = "NSA_WEIGHT_COPIES",
                 const char* value = "1") {
  register_with_layer();
  at::manual_seed(seed);
  TrainConfig tc;
  tc.steps = steps, tc.lr = 3e-3, tc.warmup_steps = 2, tc.precision = precision;
  Model m(graph_case(), at::TensorOptions().dtype(param_dtype_for(tc)).device(at::kCUDA));
  Trainer trainer(m, tc);
  DataSource data("synthetic", 7);
  auto rt = runtime_with(flag, value);
  TrainedRun r;
  for (int s = 1; s <= steps; ++s) {
    auto batch = data.next_batch(2, 256).to(at::kCUDA);
    StepStats st = trainer.step(s, batch, rt, may_replay);
    r.loss.push_back(st.loss);
    r.norm.push_back(st.grad_norm);
    r.exec.push_back(trainer.last_exec());
  }
  for (auto& [name, p] : m.parameters()) r.params.push_back(p.detach().cpu());
  r.off_reason = trainer.graph_off_reason();
  r.captured_at = trainer.graph_captured_at();
  r.replays = trainer.graph_replays();
  return r;
}

double max_param_diff(const TrainedRun& a, const TrainedRun& b) {
  double d = 0;
  for (size_t i = 0; i < a.params.size(); ++i) d = std::max(d, (a.params[i] - b.params[i]).abs().max().item<double>());
  return d;
}

TEST(StepGraph, ReplayComputesWhatTheEagerStepComputes) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  if (!testing::capture_possible()) GTEST_SKIP() << "capture needs the caching allocator";
  DeterministicAlgorithms deterministic;
  for (auto precision : {Precision::bf16, Precision::fp32}) {
    SCOPED_TRACE(precision == Precision::bf16 ? "bf16" : "fp32");
    const uint64_t seed = fresh_seed();
    const int steps = 6;
    const TrainedRun eager = train(precision, steps, false, seed);
    const TrainedRun again = train(precision, steps, false, seed);
    const TrainedRun graphed = train(precision, steps, true, seed);
    ASSERT_EQ(graphed.off_reason, "");
    EXPECT_EQ(graphed.captured_at, kEagerStepsBeforeGraph + 1);
    EXPECT_EQ(graphed.replays, steps - kEagerStepsBeforeGraph);
    for (int s = 0; s < steps; ++s) {
      const StepExec want = s < kEagerStepsBeforeGraph ? StepExec::eager
                            : s == kEagerStepsBeforeGraph ? StepExec::capture : StepExec::replay;
      EXPECT_EQ(graphed.exec[s], want) << "step " << s + 1;
      EXPECT_EQ(eager.exec[s], StepExec::eager);
    }
    // The yardstick first: the eager step reproduces itself exactly.
    ASSERT_EQ(max_param_diff(eager, again), 0.0) << "the eager step is not reproducible under deterministic algorithms";
    ASSERT_EQ(eager.loss, again.loss);
    EXPECT_EQ(max_param_diff(eager, graphed), 0.0);
    for (int s = 0; s < steps; ++s) {
      EXPECT_EQ(graphed.loss[s], eager.loss[s]) << "loss at step " << s + 1;
      EXPECT_EQ(graphed.norm[s], eager.norm[s]) << "gradient norm before clipping at step " << s + 1;
    }
    EXPECT_LT(graphed.loss.back(), graphed.loss.front()) << "the replayed steps train";
  }
}

// Five bf16 steps with `flag` = "1" (eager, then replayed) against "0" (eager):
// the same parameters, losses and gradient norms to the bit, for a switch that
// must not change what a step computes.
void expect_switch_trains_the_same(const char* flag) {
  DeterministicAlgorithms deterministic;
  const uint64_t seed = fresh_seed();
  const int steps = 5;
  const TrainedRun off = train(Precision::bf16, steps, false, seed, flag, "0");
  for (bool replay : {false, true}) {
    if (replay && !testing::capture_possible()) continue;  // capture needs the caching allocator
    SCOPED_TRACE(replay ? "replayed" : "eager");
    const TrainedRun on = train(Precision::bf16, steps, replay, seed, flag, "1");
    if (replay) EXPECT_EQ(on.replays, steps - kEagerStepsBeforeGraph);
    EXPECT_EQ(max_param_diff(off, on), 0.0);
    EXPECT_EQ(on.loss, off.loss);
    EXPECT_EQ(on.norm, off.norm);
  }
}

// The 16-bit copies of the weights (NSA_WEIGHT_COPIES, Model::keep_compute_copies)
// against a cast of each weight per forward, through the CUDA kernels.
TEST(StepGraph, WeightCopiesTrainAsPerWeightCastsEagerAndReplayed) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  expect_switch_trains_the_same("NSA_WEIGHT_COPIES");
}

// Independent attention kernels on two streams (NSA_OVERLAP_STREAMS: dk/dv
// beside dq, the window and compressed branches beside the selected one)
// against everything on one stream. A missing join or an early reuse of a
// tensor another stream still reads would show as a difference here.
TEST(StepGraph, OverlappedStreamsTrainAsOneStreamEagerAndReplayed) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  expect_switch_trains_the_same("NSA_OVERLAP_STREAMS");
}

// The graph holds one batch shape: a batch of another shape (a short last
// batch) runs eagerly, and the next batch of the captured shape replays again.
TEST(StepGraph, ABatchOfAnotherShapeRunsEagerlyAndReplayResumes) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  if (!testing::capture_possible()) GTEST_SKIP() << "capture needs the caching allocator";
  register_with_layer();
  at::manual_seed(fresh_seed());
  TrainConfig tc;
  tc.steps = 6, tc.precision = Precision::bf16;
  Model m(graph_case(), at::TensorOptions().dtype(param_dtype_for(tc)).device(at::kCUDA));
  Trainer trainer(m, tc);
  DataSource data("synthetic", 5);
  auto rt = runtime_with();
  const int64_t rows[] = {2, 2, 2, 2, 1, 2};
  const StepExec want[] = {StepExec::eager, StepExec::eager, StepExec::capture, StepExec::replay, StepExec::eager,
                           StepExec::replay};
  for (int s = 1; s <= 6; ++s) {
    const StepStats st = trainer.step(s, data.next_batch(rows[s - 1], 128).to(at::kCUDA), rt, true);
    EXPECT_EQ(trainer.last_exec(), want[s - 1]) << "step " << s;
    EXPECT_TRUE(std::isfinite(st.loss) && std::isfinite(st.grad_norm)) << "step " << s;
  }
  EXPECT_EQ(trainer.graph_off_reason(), "");
  EXPECT_EQ(trainer.graph_replays(), 3);
}

// A capture the step's code breaks leaves the cell training eagerly, with the
// cause recorded; nothing trained differs from a run that never tried.
std::unique_ptr<StepGraph> failing_capture(Trainer&, const at::Tensor&, Runtime&) {
  throw std::runtime_error("operation not permitted when stream is capturing (planted)");
}

TEST(StepGraph, AFailedCaptureFallsBackToEagerStepsAndSaysWhy) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  DeterministicAlgorithms deterministic;
  const uint64_t seed = fresh_seed();
  const TrainedRun eager = train(Precision::bf16, 4, false, seed);
  register_with_layer();
  auto real = step_graph_factory();
  register_step_graph(&failing_capture);
  // train() registers the real capture again: plant the failing one inside.
  at::manual_seed(seed);
  TrainConfig tc;
  tc.steps = 4, tc.lr = 3e-3, tc.warmup_steps = 2, tc.precision = Precision::bf16;
  Model m(graph_case(), at::TensorOptions().dtype(param_dtype_for(tc)).device(at::kCUDA));
  Trainer trainer(m, tc);
  DataSource data("synthetic", 7);
  auto rt = runtime_with();
  for (int s = 1; s <= 4; ++s) {
    trainer.step(s, data.next_batch(2, 256).to(at::kCUDA), rt, /*may_replay=*/true);
    EXPECT_EQ(trainer.last_exec(), StepExec::eager) << "step " << s;
  }
  register_step_graph(real);
  EXPECT_NE(trainer.graph_off_reason().find("capture failed at step 3"), std::string::npos) << trainer.graph_off_reason();
  EXPECT_NE(trainer.graph_off_reason().find("planted"), std::string::npos);
  EXPECT_EQ(trainer.graph_captured_at(), 0);
  size_t i = 0;
  for (auto& [name, p] : m.parameters()) EXPECT_TRUE(at::equal(p.detach().cpu(), eager.params[i++])) << name;
}

// Takes every tensor the model hands over, by reference, as the harness's
// tap does; `held` keeps the last step's (a replay hands over nothing).
class TakeTensors : public Observer {
 public:
  bool wants_tensors() const override { return true; }
  void tensor(std::string_view name, int layer, int branch, const at::Tensor& t) override {
    taken.push_back({std::string(name) + " " + std::to_string(layer) + "/" + std::to_string(branch), t});
  }
  std::vector<std::pair<std::string, at::Tensor>> taken, held;
};

// Per step, host copies of the tensors the observer holds after it.
std::vector<std::vector<std::pair<std::string, at::Tensor>>> tensors_per_step(bool may_replay, uint64_t seed,
                                                                              int steps, std::vector<StepExec>& exec) {
  register_with_layer();
  at::manual_seed(seed);
  TrainConfig tc;
  tc.steps = steps, tc.lr = 3e-3, tc.warmup_steps = 2, tc.precision = Precision::bf16;
  Model m(graph_case(), at::TensorOptions().dtype(param_dtype_for(tc)).device(at::kCUDA));
  Trainer trainer(m, tc);
  DataSource data("synthetic", 7);
  auto rt = runtime_with();
  TakeTensors obs;
  rt.observer = &obs;
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> out;
  for (int s = 1; s <= steps; ++s) {
    obs.taken.clear();
    trainer.step(s, data.next_batch(2, 256).to(at::kCUDA), rt, may_replay);
    exec.push_back(trainer.last_exec());
    if (!obs.taken.empty()) obs.held = obs.taken;
    out.emplace_back();
    for (auto& [name, t] : obs.held) out.back().push_back({name, t.detach().cpu().clone()});
  }
  return out;
}

// The tensors an observer took while the step was captured live in the
// graph's memory: after each replay they hold that step's activations, the
// same bits the eager step hands over (the eager run is the oracle). This is
// what lets the harness's tensor probes watch a replayed step.
TEST(StepGraph, TensorsTakenDuringTheCaptureHoldEachReplaysValues) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  if (!testing::capture_possible()) GTEST_SKIP() << "capture needs the caching allocator";
  DeterministicAlgorithms deterministic;
  const uint64_t seed = fresh_seed();
  const int steps = 5;
  std::vector<StepExec> eager_exec, graphed_exec;
  const auto eager = tensors_per_step(false, seed, steps, eager_exec);
  const auto graphed = tensors_per_step(true, seed, steps, graphed_exec);
  ASSERT_EQ(graphed_exec.back(), StepExec::replay);
  ASSERT_EQ(graphed_exec[kEagerStepsBeforeGraph], StepExec::capture);
  for (int s = kEagerStepsBeforeGraph; s < steps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s + 1));
    ASSERT_EQ(graphed[s].size(), eager[s].size());
    ASSERT_FALSE(eager[s].empty()) << "the model handed over no tensors";
    for (size_t i = 0; i < eager[s].size(); ++i) {
      EXPECT_EQ(graphed[s][i].first, eager[s][i].first);
      EXPECT_TRUE(at::equal(graphed[s][i].second, eager[s][i].second)) << eager[s][i].first;
    }
  }
  // Not the capture's values kept: the activations change from step to step.
  bool changed = false;
  for (size_t i = 0; i < eager[steps - 1].size(); ++i)
    changed |= !at::equal(eager[steps - 1][i].second, eager[steps - 2][i].second);
  EXPECT_TRUE(changed) << "the last two steps handed over the same tensors: the comparison would not see a stale replay";
}

// What keeps steps eager is read from the cell: NSA_CUDA_GRAPH=0 and fp16
// loss scaling each stop the graph, with their reason.
TEST(StepGraph, BlockedCellsRunEagerlyWithTheirReason) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  register_with_layer();
  at::manual_seed(fresh_seed());
  for (auto [precision, flag] : {std::pair{Precision::fp16, "1"}, std::pair{Precision::bf16, "0"}}) {
    TrainConfig tc;
    tc.steps = 4, tc.precision = precision;
    Model m(graph_case(), at::TensorOptions().dtype(param_dtype_for(tc)).device(at::kCUDA));
    Trainer trainer(m, tc);
    DataSource data("synthetic", 3);
    auto rt = runtime_with("NSA_CUDA_GRAPH", flag);
    for (int s = 1; s <= 4; ++s) {
      trainer.step(s, data.next_batch(2, 64).to(at::kCUDA), rt, true);
      EXPECT_EQ(trainer.last_exec(), StepExec::eager);
    }
    EXPECT_NE(trainer.graph_off_reason(), "");
    EXPECT_EQ(trainer.graph_off_reason().find("fp16") != std::string::npos, precision == Precision::fp16)
        << trainer.graph_off_reason();
  }
}

}  // namespace
}  // namespace nsa::cuda
