#include "nsa/step_graph.h"

namespace nsa {

const char* step_exec_name(StepExec e) {
  switch (e) {
    case StepExec::eager: return "eager";
    case StepExec::capture: return "capture";
    case StepExec::replay: return "replay";
  }
  return "?";
}

namespace {
// What keeps a cell's steps eager, first match wins; each row says why in the
// words the report prints.
struct Blocker {
  bool (*applies)(const GraphSetting&);
  const char* why;
};
const Blocker kBlockers[] = {
    {[](const GraphSetting& s) { return !s.switched_on; }, "switched off (NSA_CUDA_GRAPH=0)"},
    {[](const GraphSetting& s) { return !s.cuda; }, "the model runs on the CPU"},
    {[](const GraphSetting& s) { return !s.capture_available; }, "built without the CUDA kernels (no capture linked in)"},
    {[](const GraphSetting& s) { return s.loss_scaling; },
     "fp16 loss scaling decides on the host, after backward, whether a step is skipped"},
    {[](const GraphSetting& s) { return !s.fused_optimizer; },
     "16-bit optimizer state: AdamW runs written out with host-side step scalars"},
    {[](const GraphSetting& s) { return s.distributed; }, "the gradient all-reduce runs through a process group"},
    {[](const GraphSetting& s) { return s.faults; }, "planted faults act on the host at chosen steps"},
    {[](const GraphSetting& s) { return s.anomaly; }, "autograd anomaly detection (NSA_DETECT_ANOMALY=1)"},
    {[](const GraphSetting& s) { return s.sequential_prefill; },
     "sequential prefill launches per token (NSA_PREFILL_BATCHED=0)"},
};

StepGraphFactory& factory_slot() {
  static StepGraphFactory f = nullptr;
  return f;
}
}  // namespace

const char* graph_blocker(const GraphSetting& s) {
  for (const auto& b : kBlockers)
    if (b.applies(s)) return b.why;
  return nullptr;
}

void register_step_graph(StepGraphFactory f) { factory_slot() = f; }
StepGraphFactory step_graph_factory() { return factory_slot(); }

}  // namespace nsa
