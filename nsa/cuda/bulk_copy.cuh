// Hopper's tensor copies (cp.async.bulk.tensor, sm_90, "TMA"): the copy
// engine moves a whole box of a tensor (described by a tensor map the host
// encodes) into shared memory and counts the bytes it delivered on an
// mbarrier, so one thread's instruction moves a 64-row K or V tile where
// cp.async takes one per 16 bytes and every thread forms its own addresses
// (ncu, the QueryColumns forward at m7c 8k: the tile copy's issue was ~30 %
// of the kernel's instructions, repeated by every warp every tile). One-row
// bulk copies (cp.async.bulk) measured 2.5x slower there: one request a row.
//
// The protocol per stage: one thread arms the stage's barrier with the bytes
// to come (arrive_expect_tx) and issues the copies (copy_tensor_3d), and every
// thread that reads the stage waits for the barrier's phase (wait). A barrier
// completes one phase per use; the waiter passes the parity of the phase it
// waits for (0, 1, 0, ... per stage).
//
// Compiled only for sm_90 and up (NSA_BULK_DEVICE); elsewhere callers keep
// their cp.async path.
#pragma once

#include <cstdint>

#include "nsa/cuda/mma_tile.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define NSA_BULK_DEVICE 1
#else
#define NSA_BULK_DEVICE 0
#endif

namespace nsa::cuda::bulk {

// Declared everywhere (a caller's discarded branch still names them); the
// bodies exist only where NSA_BULK_DEVICE is 1, and nothing calls them elsewhere.

// A barrier expecting `count` arrivals a phase (plus its transaction bytes).
__device__ __forceinline__ void init(uint64_t* bar, unsigned count) {
#if NSA_BULK_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(tc::smem_u32(bar)), "r"(count) : "memory");
#endif
}
// Initialised barriers made visible to the copy engine; a CTA barrier after
// it publishes them to the other threads.
__device__ __forceinline__ void fence_init() {
#if NSA_BULK_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// This thread's arrival on the current phase, which then also waits for `bytes`.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, unsigned bytes) {
#if NSA_BULK_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(tc::smem_u32(bar)), "r"(bytes)
               : "memory");
#endif
}
// A box of a 3-D tensor (its tensor map, `map`, a kernel parameter) at
// coordinates (c0, c1, c2), innermost first, to shared dst (128-byte
// aligned), counted on bar. Past the tensor's end the box is zeros.
__device__ __forceinline__ void copy_tensor_3d(void* dst, const void* map, int c0, int c1, int c2, uint64_t* bar) {
#if NSA_BULK_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(tc::smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(tc::smem_u32(bar))
      : "memory");
#endif
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void wait(uint64_t* bar, unsigned parity) {
#if NSA_BULK_DEVICE
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(tc::smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

}  // namespace nsa::cuda::bulk
