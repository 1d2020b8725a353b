#pragma once
// The NSA attention layer: projections, the path chosen by flags, the gate and
// the output projection; reports gates, selections and routes to the observer.
#include <ATen/ATen.h>

#include "nsa/nsa_paths.h"

namespace nsa {

enum class Path { reference, batched, sequential, cuda };
const char* path_name(Path p);

// The path the flags select for an input on this device.
Path choose_path(const Runtime& rt, const at::Tensor& x);

// x [B,S,D] in the compute dtype → [B,S,D]. `path` overrides the flags' choice.
at::Tensor nsa_attention(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c, const Runtime& rt, int layer,
                         std::optional<Path> path = std::nullopt, BranchOutputs* branches_out = nullptr);

// Hook for the CUDA paths (set by nsa_cuda when compiled in): fills the branch
// outputs or returns false to fall back (the fallback is reported as a route).
using CudaBranchesFn = bool (*)(const Projected&, const NsaWeights&, const ModelConfig&, const Runtime&,
                                BranchOutputs&);
void register_cuda_branches(CudaBranchesFn fn);

}  // namespace nsa
