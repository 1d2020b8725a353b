// Independent kernels on two streams, the pattern every overlap here uses: a
// pool stream forked from the caller's current stream (an event: it starts
// where the caller's stream stands) and joined back (the caller's stream waits
// for everything queued on it). Both are events, so a captured CUDA graph
// records the fork and the join as edges and replays the two branches side by
// side.
//
// Memory: the caching allocator reuses a freed block for the next allocation
// on the stream that allocated it, without waiting for other streams. A tensor
// allocated on one stream and read on the other must be recorded on the reader
// (record_use) so that its block is reused only once the reader's work queued
// before the free is done.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace nsa::cuda {

class ForkedStream {
 public:
  // Forks from the current stream of `device`.
  explicit ForkedStream(c10::DeviceIndex device);
  ForkedStream(const ForkedStream&) = delete;
  ForkedStream& operator=(const ForkedStream&) = delete;
  const c10::cuda::CUDAStream& side() const { return side_; }
  const c10::cuda::CUDAStream& caller() const { return caller_; }
  // The caller's stream waits for the side stream's work queued so far.
  void join();

 private:
  c10::cuda::CUDAStream caller_, side_;
  at::cuda::CUDAEvent forked_, joined_;
};

// t's block stays out of reuse until the work queued on `stream` before t is
// freed has run (the caching allocator's recordStream). No-op for undefined or
// non-CUDA tensors and for the stream t was allocated on.
void record_use(const at::Tensor& t, const c10::cuda::CUDAStream& stream);

}  // namespace nsa::cuda
