// Independent kernels on two streams, the pattern every overlap here uses: a
// side stream forked from the caller's current stream (an event: it starts
// where the caller's stream stands) and joined back (the caller's stream waits
// for everything queued on it). Both are events, so a captured CUDA graph
// records the fork and the join as edges and replays the two branches side by
// side.
//
// The side streams are a fixed few per device (lanes), made once and kept for
// the process. Per-stream state outlives the work: ATen keeps a cuBLAS
// workspace for every (handle, stream) pair a GEMM ran on, allocated from the
// caching allocator and never freed, and the allocator keeps a freed block for
// the stream that allocated it. Forks onto ATen's pool of 32 streams, handed
// out round-robin, ran the compressed branch's GEMMs on a new stream in most
// steps: the allocated bytes of an m7c_125m batch-1 cell rose by 80 MiB at
// every step (the memory probe's memory_growth) until every pool stream had
// its workspace.
//
// Memory across streams: a freed block is reused by the next allocation on
// its own stream without waiting for other streams. A tensor allocated on one
// stream and read on another must be recorded on the reader (record_use), so
// that its block is reused only once the reader's work queued before the free
// is done: the fork records what the side stream will read, the join what the
// caller's stream will read of the side's.
#pragma once

#include <initializer_list>

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace nsa::cuda {

// Who forks: the layer's window and compressed branches each have a lane; a
// kernel pair (dk/dv beside dq) forks onto the pair lane of its caller's
// stream (the default stream's, the window lane's or the compressed lane's),
// so nested forks never wait on each other.
enum class Lane : int { window = 0, compressed = 1, kernel_pair = 2 };

class ForkedStream {
 public:
  using Tensors = std::initializer_list<at::Tensor>;  // spelled out where optional::emplace forwards it
  // Forks from the current stream of `device` onto `lane`'s stream. `reads`:
  // tensors of the caller's that the side stream will read and that may be
  // freed before a join (each recorded on the side stream).
  ForkedStream(c10::DeviceIndex device, Lane lane, Tensors reads = {});
  ForkedStream(const ForkedStream&) = delete;
  ForkedStream& operator=(const ForkedStream&) = delete;
  const c10::cuda::CUDAStream& side() const { return side_; }
  // The caller's stream waits for the side stream's work queued so far.
  // `made`: tensors the side stream made that the caller's stream reads after
  // (each recorded on the caller's stream).
  void join(Tensors made = {});

 private:
  c10::cuda::CUDAStream caller_, side_;
  at::cuda::CUDAEvent forked_, joined_;
};

// t's block stays out of reuse until the work queued on `stream` before t is
// freed has run (the caching allocator's recordStream). No-op for undefined or
// non-CUDA tensors and for the stream t was allocated on.
void record_use(const at::Tensor& t, const c10::cuda::CUDAStream& stream);

}  // namespace nsa::cuda
