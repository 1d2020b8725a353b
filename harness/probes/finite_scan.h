#pragma once
// One kernel that tells whether every element of many CUDA tensors is finite.
// The finite probe asks this of every parameter, gradient and optimizer state
// after every step (~1 300 tensors on a 12-layer model); through ATen that is
// a few launches but ~5 ms of host work making per-tensor views, on a step of
// ~110 ms. Here the host only writes a table of (pointer, length, dtype).
#include <ATen/core/Tensor.h>

#include <vector>

namespace harness {

// The tensors this scan can read: CUDA, contiguous, fp32/fp64/fp16/bf16.
bool finite_scan_accepts(const at::Tensor& t);

// True when every element of every tensor is finite. All tensors must be
// accepted by finite_scan_accepts and sit on one device. One host sync.
bool all_finite_by_scan(const std::vector<at::Tensor>& tensors);

}  // namespace harness
