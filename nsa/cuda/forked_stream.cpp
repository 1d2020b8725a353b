#include "nsa/cuda/forked_stream.h"

#include <c10/cuda/CUDACachingAllocator.h>

namespace nsa::cuda {

ForkedStream::ForkedStream(c10::DeviceIndex device)
    : caller_(c10::cuda::getCurrentCUDAStream(device)),
      side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {
  // The pool hands its streams out round-robin: it may hand back the caller's
  // own (a capturing test takes one from the pool too). Two is enough to skip it.
  if (side_ == caller_) side_ = c10::cuda::getStreamFromPool(false, device);
  forked_.record(caller_);
  forked_.block(side_);
}

void ForkedStream::join() {
  joined_.record(side_);
  joined_.block(caller_);
}

void record_use(const at::Tensor& t, const c10::cuda::CUDAStream& stream) {
  if (!t.defined() || !t.is_cuda() || !t.has_storage()) return;
  c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
}

}  // namespace nsa::cuda
