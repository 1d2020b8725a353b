#include "nsa/nsa_layer.h"

#include "nsa/faults.h"

namespace nsa {
namespace {
CudaBranchesFn g_cuda_branches = nullptr;

// Planted (inplace_saved_buffer): the gates go through one workspace shared by
// every layer; the next layer's copy overwrites what this layer saved for backward.
at::Tensor through_shared_workspace(const at::Tensor& gates) {
  static at::Tensor workspace;
  if (!workspace.defined() || workspace.sizes() != gates.sizes() || workspace.scalar_type() != gates.scalar_type() ||
      workspace.device() != gates.device())
    workspace = at::empty_like(gates);
  workspace.copy_(gates);
  return workspace;
}
}  // namespace

void register_cuda_branches(CudaBranchesFn fn) { g_cuda_branches = fn; }

const char* path_name(Path p) {
  switch (p) {
    case Path::reference: return "reference";
    case Path::batched: return "batched";
    case Path::sequential: return "sequential";
    case Path::cuda: return "cuda";
  }
  return "?";
}

Path choose_path(const Runtime& rt, const at::Tensor& x) {
  if (rt.force_reference) return Path::reference;
  if (!rt.prefill_batched) return Path::sequential;
  if (x.is_cuda() && g_cuda_branches && (rt.use_cuda_sel || rt.use_cuda_win || rt.use_cuda_cmp)) return Path::cuda;
  return Path::batched;
}

at::Tensor nsa_attention(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c, const Runtime& rt, int layer,
                         std::optional<Path> path, BranchOutputs* branches_out) {
  Path chosen = path.value_or(choose_path(rt, x));
  auto pj = project(w, x, c);
  BranchOutputs br;
  switch (chosen) {
    case Path::reference:
      br = nsa_reference(pj, w, c);
      if (rt.observer) for (auto b : {"cmp", "slc", "win"}) rt.observer->route(b, "reference");
      break;
    case Path::sequential: br = nsa_sequential(pj, w, c, rt, layer); break;
    case Path::cuda:
      if (!g_cuda_branches(pj, w, c, rt, br)) br = nsa_batched(pj, w, c, rt, layer);
      break;
    case Path::batched: br = nsa_batched(pj, w, c, rt, layer); break;
  }
  if (fault_on(Fault::dead_projection)) br.o[2] = br.o[2].detach();  // planted: window output cut from autograd
  auto gates = gate_values(w, x, c);
  if (rt.stopgrad_gates) gates = gates.detach();
  if (rt.observer && rt.aux_stats && rt.observer->wants_tensors()) {
    rt.observer->tensor("gates", layer, -1, gates.detach());
    rt.observer->tensor("block_idx", layer, static_cast<int>(Branch::slc), br.block_idx);
    for (int b = 0; b < 3; ++b) rt.observer->tensor("branch_out", layer, b, br.o[b].detach());
  }
  if (fault_on(Fault::inplace_saved_buffer)) gates = through_shared_workspace(gates);
  auto y = combine_branches(br, gates, w);
  if (branches_out) *branches_out = br;
  return y;
}

}  // namespace nsa
