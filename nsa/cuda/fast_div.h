// Division by a divisor fixed at launch, as a multiply-high, an add and a shift
// (Granlund & Montgomery, "Division by invariant integers using
// multiplication", PLDI 1994, the round-up method), for kernels that divide by
// the same hyper-parameter inside their main loops.
//
// Why: `n / d` with a run-time d compiles to ~20 instructions (a reciprocal, a
// multiply-high and two corrections); in select_blocks' tile loop those were a
// sixth of the kernel's instructions (ncu, paper_kernel at 64k). The host
// builds the FastDiv once; `n / fd` is then 3 instructions and gives exactly
// n / d for every 0 <= n < 2^31 (nsa_cuda_reference_test checks it against `/`).
#pragma once

#include <cstdint>

#include "nsa/cuda/attention_ranges.h"  // NSA_HD

namespace nsa::cuda {

struct FastDiv {
  uint32_t mul = 1, shift = 0;  // the default divides by 1

  FastDiv() = default;
  // d >= 1. shift = ceil(log2 d); mul = floor(2^32 (2^shift - d) / d) + 1, so
  // n / d = (mulhi(n, mul) + n) >> shift: the sum stays below 2^32 for n < 2^31.
  explicit FastDiv(int divisor) {
    const uint64_t d = uint64_t(divisor);
    while ((uint64_t(1) << shift) < d) ++shift;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
};

// n / fd for 0 <= n < 2^31 (not checked: callers pass indices and counts).
NSA_HD int operator/(int n, const FastDiv& fd) {
#if defined(__CUDA_ARCH__)
  const uint32_t hi = __umulhi(uint32_t(n), fd.mul);
#else
  const uint32_t hi = uint32_t((uint64_t(uint32_t(n)) * fd.mul) >> 32);
#endif
  return int((hi + uint32_t(n)) >> fd.shift);
}

}  // namespace nsa::cuda
