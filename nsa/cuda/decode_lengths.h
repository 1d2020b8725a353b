// The lengths of one decode-graph replay, written by a kernel whose arguments
// carry them (DecodeGraph's first launches).
//
// Why a kernel and not a copy: a replay's lengths are the only thing that
// changes per token. Copying them from pinned host memory needs the previous
// replay's copy to have run before the host may rewrite its source, so every
// replay waited on the GPU (H200, m7c at 64k, replays back to back with no
// attention launch: 7.4-7.9 us a replay with the copy, its events and that
// wait, 2.6-3.0 with this kernel; the whole step 33.1 -> 28.8 us with the
// other changes of that commit). A kernel node's arguments are
// copied when the graph is launched (cudaGraphExecKernelNodeSetParams changes
// only later launches), so the host sets them and launches without waiting.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace nsa::cuda {

constexpr int kLengthsPerLaunch = 256;  // rows one length kernel writes (1 KB of arguments)

struct DecodeLengths {
  int* dst = nullptr;  // the device lengths, rows [first, first + count)
  int first = 0, count = 0;
  int len[kLengthsPerLaunch] = {};
};

// The kernel (for finding its nodes in a captured graph and updating them) and
// a launch of it on `stream` (for the capture).
const void* decode_lengths_kernel();
void launch_decode_lengths(const DecodeLengths& lengths, cudaStream_t stream);

}  // namespace nsa::cuda
