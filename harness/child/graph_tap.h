#pragma once
// Activations for probes on replayed steps.
//
// A replay of the captured step runs no host code, so the model hands the
// observer nothing. But the tensors the observer took while the graph was
// captured are the graph's own: each replay rewrites them (nsa/step_graph.h).
// GraphTap asks the observer to take tensors through the capture whenever a
// probe will want them later in the run, keeps what it took, and gives those
// to the probes on a replayed step that asks — so a sampled tensor probe
// (finite, gates, invariants) no longer forces that step out of the graph.
#include <vector>

#include "harness/probes/probe.h"
#include "nsa/step_graph.h"

namespace harness::child {

class GraphTap {
 public:
  // `later`: some probe wants tensors at a step the graph may replay.
  explicit GraphTap(bool later) : armed_(later) {}

  // Should the observer take tensors this step although no probe asked? Until
  // the graph is captured, when a probe will want them from a replay.
  bool arms_observer() const { return armed_ && !captured_; }

  // Must a step whose probes want tensors run eagerly? Only once a graph was
  // captured without them (none was wanted then, or the graph holds none).
  bool needs_eager_for_tensors() const { return captured_ && !holds_; }

  // After each step: keeps the tensors a capture took, hands them to the
  // probes on a replayed step that asked, and leaves the tap empty on a step
  // that did not ask (probes read whatever the tap holds).
  void after_step(nsa::StepExec exec, bool probes_asked, TensorTap& tap) {
    if (exec == nsa::StepExec::capture) {
      captured_ = true;
      holds_ = armed_ && !tap.entries.empty();
      if (holds_) held_ = tap.entries;
    }
    if (exec == nsa::StepExec::replay && probes_asked && holds_) tap.entries = held_;
    if (!probes_asked) tap.entries.clear();
  }

 private:
  bool armed_;
  bool captured_ = false, holds_ = false;
  std::vector<TensorTap::Entry> held_;
};

}  // namespace harness::child
