// The length kernel of a decode-graph replay (decode_lengths.h says why).
#include "nsa/cuda/decode_lengths.h"

#include <c10/cuda/CUDAException.h>

#include "nsa/cuda/decode_kernels.cuh"

namespace nsa::cuda {
namespace {

__global__ void __launch_bounds__(kLengthsPerLaunch) nsa_decode_lengths_kernel(DecodeLengths l) {
  // The step's first launch may start now; it waits for this grid before it
  // reads a length (chain_start).
  decode::chain_release();
  const int i = threadIdx.x;
  if (i < l.count) l.dst[l.first + i] = l.len[i];
}

}  // namespace

const void* decode_lengths_kernel() { return reinterpret_cast<const void*>(&nsa_decode_lengths_kernel); }

void launch_decode_lengths(const DecodeLengths& lengths, cudaStream_t stream) {
  nsa_decode_lengths_kernel<<<1, kLengthsPerLaunch, 0, stream>>>(lengths);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace nsa::cuda
