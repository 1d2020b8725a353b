// Helpers shared by the kernel tests: skip without a device, random inputs,
// error metrics that print what a human needs, and one driver that runs a
// kernel and its float64 reference through autograd and compares the output
// and every gradient.
#pragma once

#include <functional>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "nsa/cuda/cudnn_sdpa.h"
#include "nsa/cuda/nsa_cuda.h"

#define NSA_REQUIRE_CUDA()                                                             \
  do {                                                                                 \
    if (!nsa::cuda::kernels_available())                                               \
      GTEST_SKIP() << "no CUDA device: " << nsa::cuda::unavailable_reason();           \
  } while (0)

namespace nsa::cuda::testing {

// Can this process capture a CUDA graph? Without the caching allocator (the
// sanitizer runs set PYTORCH_NO_CUDA_MEMORY_CACHING) every allocation is a
// cudaMalloc, which a capture forbids: capturing tests skip that part there.
bool capture_possible();

// Relative RMS error allowed per dtype: bf16/fp16 5e-3 (DESIGN.md §2), fp32 tight.
double tolerance_for(at::ScalarType dtype);

// Compares got (any dtype/device) with ref (float64): non-finite values fail
// with their first index; relative RMS must be <= tol (if ref is all zero, the
// RMS error itself must be <= tol: the inputs are O(1)). Prints name, error, share of the tolerance used, and the
// worst element.
void expect_close(const std::string& name, const at::Tensor& got, const at::Tensor& ref, double tol);

struct AttnInputs {
  at::Tensor q, k, v, dout;  // CUDA, in the case's dtype
};
// Random normal q [B,S,H,dk], k [B,Sk,G,dk], v [B,Sk,G,dv], dout [B,S,H,dv].
AttnInputs make_inputs(int64_t B, int64_t S, int64_t Sk, int64_t H, int64_t G, int64_t dk, int64_t dv,
                       at::ScalarType dtype, uint64_t seed);

// Compressed keys of a sequence of S tokens with block l and stride d
// (DESIGN.md §2): (S - l) / d + 1, none when S < l.
inline int64_t compressed_len(int64_t S, int64_t l, int64_t d) { return S >= l ? (S - l) / d + 1 : 0; }

using AttnFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
// Runs `kernel` on the inputs and `reference` on their float64 CPU copies, both
// through autograd with the same upstream gradient, with output poisoning on;
// checks o, dq, dk, dv.
void check_branch(const std::string& what, const AttnInputs& in, const AttnFn& kernel,
                  const AttnFn& reference);

// BranchSpec::dq = `way` (BackwardDq::atomic or ::slots: dq made by the dk/dv
// kernel): `kernel_way` (the branch's autograd function asking for it)
// against the float64 `reference` as check_branch does; then, through
// attention_backward on one forward, dk and dv the same bits as with the dq
// kernel (the dk/dv arithmetic is untouched), dq close to the dq kernel's
// (itself checked against the reference first) also with the key tiles' rows
// split over 3 CTAs, and last_backward_dq() == `way` where `applies` (else
// kernel: the dq kernel ran instead). Slots also promise bitwise
// reproducibility: dq the same bits in a second run and over 3 row splits.
void check_dq_in_dkdv(const std::string& what, const AttnInputs& in, BranchSpec spec, const AttnFn& kernel_way,
                      const AttnFn& reference, bool applies, BackwardDq way = BackwardDq::atomic);

// Random distinct candidate blocks (j*l' <= t) per (b,t,g), up to n of them,
// -1 for the rest, slots shuffled: what a valid selection may look like.
at::Tensor random_block_idx(int64_t B, int64_t S, int64_t G, int64_t n, int64_t sel_block, uint64_t seed);

// A detached float64 CPU copy: what the oracles compute on.
at::Tensor f64(const at::Tensor& t);
// "[2,37,96] BFloat16": a case's sizes and dtype for a SCOPED_TRACE.
std::string describe_case(at::IntArrayRef sizes, at::ScalarType dtype);

// One switch of the kernel library set for a scope and restored after it:
// SettingScope<bool> s(force_v1_kernels, set_force_v1_kernels, true).
template <typename V>
class SettingScope {
 public:
  SettingScope(V (*get)(), void (*set)(V), V value) : set_(set), prev_(get()) { set_(value); }
  ~SettingScope() { set_(prev_); }
  SettingScope(const SettingScope&) = delete;
  SettingScope& operator=(const SettingScope&) = delete;

 private:
  void (*set_)(V);
  V prev_;
};

// Poisoned outputs for a scope (outputs start as NaN, so an element a kernel
// forgot shows), restoring the previous setting.
struct PoisonScope : SettingScope<bool> {
  PoisonScope() : SettingScope(poison_outputs, set_poison_outputs, true) {}
};

// Forces the v1 kernels (or not) for a scope, restoring the previous setting.
struct ForceV1Scope : SettingScope<bool> {
  explicit ForceV1Scope(bool on) : SettingScope(force_v1_kernels, set_force_v1_kernels, on) {}
};

// The forward of `spec` on the inputs with v1 forced and with v2 (poisoned
// outputs): the version that ran must be 1, then 2; o must match the float64
// `reference` output within the dtype's tolerance for both; lse must agree
// between the two (fp32, 1e-5 relative RMS) with +inf in the same rows.
void check_v1_and_v2(const std::string& what, const AttnInputs& in, const BranchSpec& spec,
                     const at::Tensor& reference_o);

// A flag naming the backward after a cuDNN forward (NSA_WINDOW_BWD,
// NSA_COMPRESSED_BWD): its choices (nsa/flags.cpp) are `auto`, then ours,
// cudnn and cudnn_atomic, no more and no fewer, each parsed to its
// CudnnBackward; its kBackwardChoices row resolves `auto` to `reproducible`
// and `fast`; any other text is refused naming the flag. No device needed.
void expect_cudnn_backward_flag(std::string_view flag, CudnnBackward reproducible, CudnnBackward fast);

// check_branch with v1 forced, then with v2: forward and backward both match
// the reference, and each of forward, dq and dk/dv ran the version forced.
void check_branch_v1_and_v2(const std::string& what, const AttnInputs& in, const AttnFn& kernel,
                            const AttnFn& reference);

}  // namespace nsa::cuda::testing
