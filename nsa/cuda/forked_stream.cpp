#include "nsa/cuda/forked_stream.h"

#include <array>
#include <map>
#include <mutex>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/cuda_check.h"

namespace nsa::cuda {
namespace {

// The lanes, by index: the three branch lanes, then one kernel-pair lane for
// each stream a pair may fork from (any other stream, then each branch lane).
// Whether each runs at the greatest priority (forked_stream.h says why).
struct LaneSpec {
  int pair_of;  // the branch lane a kernel pair forks from to get here; -1: none
  bool high_priority;
};
constexpr std::array<LaneSpec, 7> kLaneSpecs{{
    {-1, false},     // 0 window
    {-1, false},     // 1 compressed
    {-1, false},     // 2 pair beside any other stream (the caller's own)
    {-1, true},      // 3 selected
    {0, false},      // 4 pair beside the window lane
    {1, false},      // 5 pair beside the compressed lane
    {3, true},       // 6 pair beside the selected lane
}};
constexpr int kLanes = int(kLaneSpecs.size());

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
    int least = 0, greatest = 0;
    NSA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    std::array<cudaStream_t, kLanes> made{};
    for (int i = 0; i < kLanes; ++i)
      NSA_CUDA_CHECK(cudaStreamCreateWithPriority(&made[i], cudaStreamNonBlocking,
                                                  kLaneSpecs[i].high_priority ? greatest : least));
    it = streams.emplace(device, made).first;
  }
  return it->second;
}

// The pair lane for a fork from `from`: the one beside its branch lane, else
// the one beside any other stream.
int pair_lane(c10::DeviceIndex device, cudaStream_t from) {
  const auto& s = lanes(device);
  for (int i = 0; i < kLanes; ++i)
    if (kLaneSpecs[i].pair_of >= 0 && s[kLaneSpecs[i].pair_of] == from) return i;
  return int(Lane::kernel_pair);
}

c10::cuda::CUDAStream lane_stream(c10::DeviceIndex device, int lane) {
  return c10::cuda::getStreamFromExternal(lanes(device)[lane], device);
}

}  // namespace

ForkedStream::ForkedStream(c10::DeviceIndex device, Lane lane, Tensors reads)
    : caller_(c10::cuda::getCurrentCUDAStream(device)), side_(caller_) {
  const int index = lane == Lane::kernel_pair ? pair_lane(device, caller_.stream()) : static_cast<int>(lane);
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
