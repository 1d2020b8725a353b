#include "harness/probes/probe.h"

#include "harness/probes/probes.h"

namespace harness {

void ProbeContext::report(Finding f) const {
  if (!f.step) f.step = step;  // 0: found before the first step (on_start probes)
  events.emit(protocol::ev::finding, {{"finding", f}});
}

void ProbeContext::table(const std::string& probe, nlohmann::json data) const {
  events.emit(protocol::ev::probe, {{"name", probe}, {"step", step}, {"data", std::move(data)}});
}

bool probe_due(const ProbeSpec& p, int step) { return p.enabled && p.every > 0 && step % p.every == 0; }

const std::vector<ProbeInfo>& probe_registry() {
  static const std::vector<ProbeInfo> kProbes = {
      // First: tracing must be running before any other probe launches a kernel.
      {"cupti", "CUPTI kernel trace and NVTX ranges (CUDA builds on a GPU)", make_cupti_probe},
      {"timing", "step time (wall, device events on GPU), tokens/s and the wait for data before the step; built into every step_end",
       make_timing_probe},
      {"memory", "peak memory and its growth per step", make_memory_probe},
      {"syncs", "device→host synchronisations per step, as the model reports them", make_syncs_probe},
      {"precision", "dtypes, master weights, AdamW eps representable, loss-scale history", make_precision_probe},
      {"finite", "loss, activations, gradients, optimizer state; first non-finite; range or logic", make_finite_probe},
      {"invariants", "selected blocks in range, causal, unique, counted, forced blocks present", make_invariants_probe, true},
      {"causality", "outputs at positions ≤ t unchanged when tokens after t change; cuts at the ends, window edge, block boundaries",
       make_causality_probe},
      {"parity", "each path the cell can route to against an independent float64 oracle, per branch and position",
       make_parity_probe, true},
      {"routing", "which implementation ran per branch vs what the scenario asked for", make_routing_probe, true},
      {"gates", "per layer branch shares, spread over tokens, saturation, constant gates, fc2 norm", make_gates_probe, true},
      {"grad_coverage", "parameters that never receive a non-zero gradient", make_grad_coverage_probe},
      {"learning", "the loss falls on the synthetic task", make_learning_probe},
      {"checksum", "world_size > 1: each rank's parameter checksum, compared across ranks (desync); first, every "
       "N-th (default 10: a host sync over every parameter) and last step", make_checksum_probe},
  };
  return kProbes;
}

std::vector<std::unique_ptr<Probe>> make_probes(const CellSpec& spec) {
  std::vector<std::unique_ptr<Probe>> out;
  for (auto& info : probe_registry()) {
    ProbeSpec ps;
    if (auto it = spec.probes.find(info.name); it != spec.probes.end()) ps = it->second;
    if (!ps.enabled) continue;
    // A dense-attention cell (the yardstick) has no selection, branches or gates to check.
    if (info.reads_nsa_layer && spec.model.attention == "dense") continue;
    if (auto p = info.make(ps)) {
      p->name_ = info.name;
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace harness
