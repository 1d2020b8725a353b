#pragma once
// Plugs the CUDA kernels into the NSA layer: its CUDA path (nsa::register_cuda_branches),
// the sequential prefill (nsa::register_cuda_sequential),
// the projection's fused epilogue (nsa::split_projection) and the gate combine of
// every path (nsa::register_gate_combine).
namespace nsa::cuda {
// Call once before the model runs (the child does, in CUDA builds).
void register_with_layer();
// The sequential prefill through the decode kernels (sequential_prefill.cpp);
// register_with_layer calls it.
void register_sequential_prefill();
}  // namespace nsa::cuda
