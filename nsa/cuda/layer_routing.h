#pragma once
// Plugs the CUDA kernels into the NSA layer's CUDA path (nsa::register_cuda_branches)
// and the projection's fused epilogue into nsa::split_projection.
namespace nsa::cuda {
// Call once before the model runs (the child does, in CUDA builds).
void register_with_layer();
}  // namespace nsa::cuda
