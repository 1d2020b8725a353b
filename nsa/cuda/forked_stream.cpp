#include "nsa/cuda/forked_stream.h"

#include <array>
#include <map>
#include <mutex>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/cuda_check.h"

namespace nsa::cuda {
namespace {

// window, compressed, and the three kernel-pair lanes (beside any other
// stream, beside the window lane, beside the compressed lane).
constexpr int kLanes = 5;

// The lanes' streams of `device`: non-blocking streams of our own, created on
// first use and never destroyed (they live as long as the process, like ATen's
// pool).
const std::array<cudaStream_t, kLanes>& lanes(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, std::array<cudaStream_t, kLanes>> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(device);
  if (it == streams.end()) {
    const c10::cuda::CUDAGuard guard(device);
    std::array<cudaStream_t, kLanes> made{};
    for (cudaStream_t& s : made) NSA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    it = streams.emplace(device, made).first;
  }
  return it->second;
}

c10::cuda::CUDAStream lane_stream(c10::DeviceIndex device, int lane) {
  return c10::cuda::getStreamFromExternal(lanes(device)[lane], device);
}

}  // namespace

ForkedStream::ForkedStream(c10::DeviceIndex device, Lane lane, Tensors reads)
    : caller_(c10::cuda::getCurrentCUDAStream(device)), side_(caller_) {
  int index = static_cast<int>(lane);
  if (lane == Lane::kernel_pair) {
    const cudaStream_t from = caller_.stream();
    index += from == lanes(device)[0] ? 1 : from == lanes(device)[1] ? 2 : 0;
  }
  side_ = lane_stream(device, index);
  forked_.record(caller_);
  forked_.block(side_);
  for (const at::Tensor& t : reads) record_use(t, side_);
}

void ForkedStream::join(Tensors made) {
  joined_.record(side_);
  joined_.block(caller_);
  for (const at::Tensor& t : made) record_use(t, caller_);
}

void record_use(const at::Tensor& t, const c10::cuda::CUDAStream& stream) {
  if (!t.defined() || !t.is_cuda() || !t.has_storage()) return;
  c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
}

}  // namespace nsa::cuda
