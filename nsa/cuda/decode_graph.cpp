// DecodeGraph: static buffers, one warm-up, one capture, replays (decode_graph.h
// says why capture needs device-side lengths and fixed capacities).
#include "nsa/cuda/decode_graph.h"

#include <cstdio>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/cuda_check.h"

namespace nsa::cuda {
namespace {

c10::DeviceIndex resolve_device(int device) {
  if (device >= 0) return c10::DeviceIndex(device);
  int d = 0;
  NSA_CUDA_CHECK(cudaGetDevice(&d));
  return c10::DeviceIndex(d);
}

// Cleanup must not throw: report and go on.
void check_noexcept(cudaError_t err, const char* what) {
  if (err != cudaSuccess) std::fprintf(stderr, "DecodeGraph: %s failed: %s\n", what, cudaGetErrorString(err));
}

}  // namespace

DecodeGraph::DecodeGraph(const DecodeShape& shape, const DecodeHyper& hyper, int version, int device)
    : shape_(shape), hyper_(hyper), stream_(c10::cuda::getStreamFromPool(false, resolve_device(device))) {
  const c10::DeviceIndex dev = stream_.device_index();
  c10::cuda::CUDAGuard guard(dev);
  const auto& s = shape_;
  TORCH_CHECK(s.capacity >= 1 && s.B >= 1, "DecodeGraph: need capacity >= 1 and B >= 1");
  const int64_t cap_c = s.capacity_cmp >= 0
                            ? s.capacity_cmp
                            : n_cmp_visible(int(s.capacity - 1), int(hyper.cmp_block), int(hyper.cmp_stride));
  const auto opts = at::TensorOptions().device(at::kCUDA, dev).dtype(s.dtype);
  in_.q = at::zeros({s.B, 1, s.H, s.dk}, opts);
  in_.k_cmp = at::zeros({s.B, cap_c, s.G, s.dk}, opts);
  in_.v_cmp = at::zeros({s.B, cap_c, s.G, s.dv}, opts);
  in_.k_slc = at::zeros({s.B, s.capacity, s.G, s.dk}, opts);
  in_.v_slc = at::zeros({s.B, s.capacity, s.G, s.dv}, opts);
  in_.k_win = at::zeros({s.B, s.capacity, s.G, s.dk}, opts);
  in_.v_win = at::zeros({s.B, s.capacity, s.G, s.dv}, opts);
  in_.len = at::ones({s.B}, opts.dtype(at::kInt));
  host_len_ = at::ones({s.B}, at::TensorOptions().dtype(at::kInt).pinned_memory(true));
  plan_ = plan_decode(in_, hyper_, version);
  ws_ = make_decode_workspace(in_, plan_);
  out_ = make_decode_outputs(in_, hyper_);

  try {
    NSA_CUDA_CHECK(cudaEventCreateWithFlags(&caller_ready_, cudaEventDisableTiming));
    NSA_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    NSA_CUDA_CHECK(cudaEventCreateWithFlags(&len_copied_, cudaEventDisableTiming));
    // The zero fills above ran on the caller's stream; the graph's stream starts after them.
    NSA_CUDA_CHECK(cudaDeviceSynchronize());
    c10::cuda::CUDAStreamGuard on_stream(stream_);
    // Warm-up outside the capture: module load and shared-memory attributes happen
    // here, and a failing launch reports as itself rather than as a capture error.
    decode_attention_out(in_, hyper_, plan_, ws_, out_);
    NSA_CUDA_CHECK(cudaStreamSynchronize(stream_));
    // ThreadLocal: only this thread's unsafe calls (allocations, syncs) are
    // forbidden while capturing; decode_attention_out makes none.
    NSA_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      decode_attention_out(in_, hyper_, plan_, ws_, out_);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      (void)cudaStreamEndCapture(stream_, &broken);
      if (broken) (void)cudaGraphDestroy(broken);
      throw;
    }
    NSA_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
    NSA_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  } catch (...) {
    release();
    throw;
  }
}

DecodeGraph::~DecodeGraph() { release(); }

void DecodeGraph::release() noexcept {
  // The caching allocator only orders frees after the caller's streams: finish
  // the graph's work before our buffers can be handed out again.
  check_noexcept(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (exec_) check_noexcept(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
  if (graph_) check_noexcept(cudaGraphDestroy(graph_), "cudaGraphDestroy");
  for (cudaEvent_t* e : {&caller_ready_, &done_, &len_copied_})
    if (*e) check_noexcept(cudaEventDestroy(*e), "cudaEventDestroy");
  exec_ = nullptr, graph_ = nullptr, caller_ready_ = done_ = len_copied_ = nullptr;
}

void DecodeGraph::replay(int64_t len) { replay(std::vector<int64_t>(size_t(shape_.B), len)); }

void DecodeGraph::replay(const std::vector<int64_t>& lens) {
  TORCH_CHECK(int64_t(lens.size()) == shape_.B, "DecodeGraph::replay: ", lens.size(), " lengths for B=", shape_.B);
  for (int64_t len : lens)
    TORCH_CHECK(len >= 1 && len <= shape_.capacity, "DecodeGraph::replay: length ", len, " outside [1, ",
                shape_.capacity, "]");
  c10::cuda::CUDAGuard guard(stream_.device_index());
  const cudaStream_t caller = at::cuda::getCurrentCUDAStream(stream_.device_index()).stream();
  // The pinned source may still be read by the previous replay's copy (normally
  // long done): wait for that copy before rewriting it.
  NSA_CUDA_CHECK(cudaEventSynchronize(len_copied_));
  int* host = host_len_.data_ptr<int>();
  for (size_t b = 0; b < lens.size(); ++b) host[b] = int(lens[b]);
  NSA_CUDA_CHECK(cudaEventRecord(caller_ready_, caller));  // after the caller's writes to the buffers
  NSA_CUDA_CHECK(cudaStreamWaitEvent(stream_, caller_ready_, 0));
  NSA_CUDA_CHECK(cudaMemcpyAsync(in_.len.data_ptr<int>(), host, lens.size() * sizeof(int), cudaMemcpyHostToDevice,
                                 stream_));
  NSA_CUDA_CHECK(cudaEventRecord(len_copied_, stream_));
  NSA_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  NSA_CUDA_CHECK(cudaEventRecord(done_, stream_));
  NSA_CUDA_CHECK(cudaStreamWaitEvent(caller, done_, 0));  // the caller's next reads see the outputs
}

}  // namespace nsa::cuda
