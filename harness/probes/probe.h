#pragma once
// The one interface every probe implements. A probe watches a training run from
// inside the child process and reports what it saw as events: a `probe` table
// and, when something is wrong, a `finding`. Probes never decide an outcome;
// the supervisor's classification does, from the findings.
#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/protocol/events.h"
#include "nsa/data.h"
#include "nsa/model.h"
#include "nsa/trainer.h"

namespace harness {

// Tensors the model handed to the observer during the current step.
struct TensorTap {
  struct Entry {
    std::string name;
    int layer;
    int branch;
    at::Tensor value;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::string> routes;  // branch → implementation that ran
  int sync_points = 0;
  void clear() { entries.clear(); routes.clear(); sync_points = 0; }
};

struct ProbeContext {
  const CellSpec& spec;
  nsa::Model& model;
  nsa::Trainer& trainer;
  nsa::Runtime& rt;
  protocol::EventWriter& events;
  const TensorTap& tap;
  at::Device device;
  std::string out_dir;               // the cell directory (artifacts go here)
  int step = 0;                      // the step just finished (0 before training)
  at::Tensor batch;                  // that step's batch [B,S+1] on the device
  nsa::StepStats stats;              // that step's stats
  std::vector<at::Tensor> params_before;  // parameter values before the step (when a probe asked for them)
  int rank = 0;                      // this process's rank (world_size > 1 cells)

  void report(Finding f) const;      // emits a `finding` event
  void table(const std::string& probe, nlohmann::json data) const;  // emits a `probe` event
};

class Probe {
 public:
  virtual ~Probe() = default;
  // The name it is registered under: probe_registry() is the one list of probe
  // names, and make_probes gives each probe its own.
  const std::string& name() const { return name_; }
  // Asked before each step: should the model hand over per-layer tensors this step?
  virtual bool wants_tensors(int /*step*/) const { return false; }
  // Asked before each step: does this probe need the parameters as they were before it?
  virtual bool wants_params_before(int /*step*/) const { return false; }
  // Asked before each step: does this probe need the model's host code to run
  // this step — its phases, routes, kernels launched one by one under their
  // ranges? A step nobody watches from inside may run as a replay of the
  // captured CUDA graph (nsa/step_graph.h), which runs no host code. Tensors
  // (wants_tensors) do not need it: the replay rewrites the ones the capture
  // took (harness/child/graph_tap.h); nor does the parameter snapshot, taken
  // before the step.
  virtual bool watches_inside(int /*step*/) const { return false; }
  // Told before each step whether the probes watch it (always, except under
  // `probes: alternate`, where odd steps run unobserved as the yardstick). An
  // unobserved step gets no step-end hook; a probe that works during the step
  // (the CUPTI trace) stands down for it.
  virtual void set_observing(bool /*on*/) {}
  virtual void on_start(ProbeContext&) {}
  // Every phase the model enters or leaves ("step", "forward", "layer" 3, …).
  virtual void on_phase(bool /*begin*/, std::string_view /*name*/, int /*layer*/, int /*step*/) {}
  virtual void on_step_end(ProbeContext&) {}
  virtual void on_run_end(ProbeContext&) {}

 private:
  friend std::vector<std::unique_ptr<Probe>> make_probes(const CellSpec& spec);
  std::string name_;
};

// All probes known to the harness, in the order they run after a step (the more
// specific diagnoses first: a causality leak also breaks parity).
struct ProbeInfo {
  std::string name;
  std::string doc;
  std::function<std::unique_ptr<Probe>(const ProbeSpec&)> make;
  bool reads_nsa_layer = false;  // checks the sparse layer itself: not run on a dense-attention model
};
const std::vector<ProbeInfo>& probe_registry();

// The probes a cell asked for (every registered probe unless switched off).
std::vector<std::unique_ptr<Probe>> make_probes(const CellSpec& spec);

// A probe runs at step s when its `every` divides s (every = 1: each step).
bool probe_due(const ProbeSpec& p, int step);

}  // namespace harness
