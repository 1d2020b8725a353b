#pragma once
// The training step as one CUDA graph.
//
// A step of the 125M model is ~2 500 kernel launches whose host cost and gaps
// are a tenth of the step; captured once and replayed, it is one launch. What
// capture needs, and the trainer provides: no host sync inside the step (the
// gradient norm, the clipping factor and AdamW's learning rate and step count
// stay on the device), gradients that live at fixed addresses (zeroed in place,
// never re-allocated), a static input buffer the batch is copied into, and the
// same shapes every step.
//
// A replayed step runs exactly the kernels the eager step runs, in the same
// order, on the same data — so it computes the same numbers (the GPU test
// holds replay and eager bitwise equal). What it does not do is run host code:
// per-step host decisions and planted faults act only while capturing, and
// the observer hears of phases, routes and syncs only in eager steps. What a
// replay does keep is the tensors: those the observer took during the capture
// live in the graph's memory and each replay rewrites them, so a probe that
// reads activations can watch a replayed step. The harness replays every step
// no probe needs the host code of (Probe::watches_inside) and records per
// step which way it ran.
//
// The capture itself is CUDA code (nsa/cuda/step_graph.cpp), registered like
// the other CUDA paths; a build without it runs every step eagerly.
#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace nsa {

class Trainer;
struct Runtime;

// How one training step ran.
enum class StepExec { eager, capture, replay };
const char* step_exec_name(StepExec e);

// Why a cell's steps cannot be graphed, or nullptr when they can. One table of
// reasons (step_graph.cpp), checked once before the first step.
struct GraphSetting {
  bool cuda = false;             // the model's tensors are on a CUDA device
  bool switched_on = true;       // NSA_CUDA_GRAPH
  bool loss_scaling = false;     // fp16: the scaler decides on the host whether a step is skipped
  bool fused_optimizer = true;   // AdamW's update runs from device-side lr and step count
  bool distributed = false;      // a gradient all-reduce through a process group
  bool faults = false;           // planted faults act on the host at chosen steps
  bool anomaly = false;          // NSA_DETECT_ANOMALY
  bool sequential_prefill = false;
  bool capture_available = false;  // the CUDA capture is linked in (register_step_graph)
};
const char* graph_blocker(const GraphSetting& s);

// One captured step. Created (and captured) by the registered factory from an
// eager trainer that has run at least one step; replay() then runs one step.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  // A batch of another shape or dtype than the captured one runs eagerly.
  virtual bool accepts(const at::Tensor& batch) const = 0;
  // Copies `batch` into the static input and replays the step. Returns the
  // device tensor [loss, grad norm before clipping] (fp64) the step wrote.
  virtual at::Tensor replay(const at::Tensor& batch) = 0;
};

// Captures one step of `trainer` on `batch`'s shape (nothing is trained by the
// capture). Throws with the cause when capture fails.
using StepGraphFactory = std::unique_ptr<StepGraph> (*)(Trainer& trainer, const at::Tensor& batch, Runtime& rt);
void register_step_graph(StepGraphFactory f);
StepGraphFactory step_graph_factory();  // nullptr when none is registered

}  // namespace nsa
