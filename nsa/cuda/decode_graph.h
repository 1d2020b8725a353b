// The whole NSA decode attention step (decode_attention.h: four launches)
// captured once into a CUDA graph and replayed per token.
//
// Why this works, and why it needs what it needs:
//  - A graph freezes every launch: kernel, grid, and every argument, pointers
//    included. So all buffers are static (owned here, allocated once), and the
//    caches have a fixed CAPACITY: growing a tensor would move it.
//  - The only thing that changes per token is the length. It cannot be an
//    argument of the attention kernels (frozen at capture), so they read it
//    from a device buffer, which the graph's first kernels write from their own
//    arguments; replay() sets those arguments in the instantiated graph
//    (decode_lengths.h: why a kernel and not a copy) and launches it on the
//    caller's stream. Grids are sized for the capacity; each CTA derives its
//    share of the keys from the length it reads, so one graph serves every
//    length <= capacity.
//  - Capture needs a stream other than the legacy default stream, which cannot
//    be captured; the graph owns one from the pool for that. Launches of one
//    graph run one after another whatever streams they are issued on.
//
// Use: write the new token into the static buffers (q, and the caches at row
// len-1 / the compressed block that just completed) on your current stream,
// call replay(len), read outputs() on your current stream: the replay runs on
// it, after your pending work.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "nsa/cuda/decode_attention.h"
#include "nsa/cuda/decode_lengths.h"

namespace nsa::cuda {

struct DecodeShape {
  int64_t B = 1, H = 1, G = 1, dk = 64, dv = 64;
  int64_t capacity = 0;      // tokens the raw caches hold
  int64_t capacity_cmp = -1; // compressed blocks the compressed cache holds; -1 = n_cmp(capacity)
  at::ScalarType dtype = at::kBFloat16;
};

class DecodeGraph {
 public:
  // Allocates the buffers (zeros), warms the kernels up once at length 1 on the
  // graph's stream, then captures. version as in plan_decode (0 = best).
  DecodeGraph(const DecodeShape& shape, const DecodeHyper& hyper, int version = 0, int device = -1);
  ~DecodeGraph();
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  // The static inputs (write into them; never reassign the tensors) and outputs.
  const DecodeCaches& inputs() const { return in_; }
  const DecodeResult& outputs() const { return out_; }
  const DecodePlan& plan() const { return plan_; }
  const DecodeShape& shape() const { return shape_; }

  // Sets the length of every row (or of each row) and runs the step.
  // 1 <= len <= capacity, checked here on the host.
  void replay(int64_t len);
  void replay(const std::vector<int64_t>& lens);

 private:
  void find_length_nodes();
  void release() noexcept;  // graph, event; waits for the last replay first

  DecodeShape shape_;
  DecodeHyper hyper_;
  DecodePlan plan_;
  DecodeCaches in_;
  DecodeResult out_;
  DecodeWorkspace ws_;
  c10::cuda::CUDAStream stream_;  // for the capture
  cudaEvent_t done_ = nullptr;    // recorded after each replay
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<cudaGraphNode_t> length_nodes_;  // node c writes rows [c * kLengthsPerLaunch, ...)
};

}  // namespace nsa::cuda
