// DecodeGraph: static buffers, one warm-up, one capture, replays (decode_graph.h
// says why capture needs device-side lengths and fixed capacities).
#include "nsa/cuda/decode_graph.h"

#include <algorithm>
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

// Rows [first, first + kLengthsPerLaunch) of `lens` as one length kernel's arguments.
DecodeLengths lengths_chunk(int* dst, const std::vector<int64_t>& lens, int64_t first) {
  DecodeLengths l;
  l.dst = dst;
  l.first = int(first);
  l.count = int(std::min<int64_t>(kLengthsPerLaunch, int64_t(lens.size()) - first));
  for (int i = 0; i < l.count; ++i) l.len[i] = int(lens[size_t(first + i)]);
  return l;
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
  plan_ = plan_decode(in_, hyper_, version);
  plan_.chain_first = plan_.chained;  // launch 1 follows the length kernel (decode_lengths.h)
  ws_ = make_decode_workspace(in_, plan_);
  out_ = make_decode_outputs(in_, hyper_);

  // The length kernels (all rows at length 1), then the step: what one replay runs.
  const std::vector<int64_t> ones(size_t(s.B), 1);
  const auto step = [&] {
    for (int64_t first = 0; first < s.B; first += kLengthsPerLaunch)
      launch_decode_lengths(lengths_chunk(in_.len.data_ptr<int>(), ones, first), stream_.stream());
    decode_attention_out(in_, hyper_, plan_, ws_, out_);
  };
  try {
    NSA_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    // The zero fills above ran on the caller's stream; the graph's stream starts after them.
    NSA_CUDA_CHECK(cudaDeviceSynchronize());
    c10::cuda::CUDAStreamGuard on_stream(stream_);
    // Warm-up outside the capture: module load and shared-memory attributes happen
    // here, and a failing launch reports as itself rather than as a capture error.
    step();
    NSA_CUDA_CHECK(cudaStreamSynchronize(stream_));
    // ThreadLocal: only this thread's unsafe calls (allocations, syncs) are
    // forbidden while capturing; decode_attention_out makes none.
    NSA_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      step();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      (void)cudaStreamEndCapture(stream_, &broken);
      if (broken) (void)cudaGraphDestroy(broken);
      throw;
    }
    NSA_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
    find_length_nodes();
    NSA_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  } catch (...) {
    release();
    throw;
  }
}

// The captured length kernels, by the first row each writes (read back from the
// node's arguments: the order of a graph's node list is not specified).
void DecodeGraph::find_length_nodes() {
  size_t n = 0;
  NSA_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  NSA_CUDA_CHECK(cudaGraphGetNodes(graph_, nodes.data(), &n));
  length_nodes_.assign(size_t((shape_.B + kLengthsPerLaunch - 1) / kLengthsPerLaunch), nullptr);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    NSA_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams kp{};
    NSA_CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &kp));
    if (kp.func != decode_lengths_kernel()) continue;
    const int first = static_cast<const DecodeLengths*>(kp.kernelParams[0])->first;
    length_nodes_.at(size_t(first / kLengthsPerLaunch)) = node;
  }
  for (cudaGraphNode_t node : length_nodes_)
    TORCH_CHECK(node != nullptr, "DecodeGraph: a length kernel is missing from the captured graph");
}

DecodeGraph::~DecodeGraph() { release(); }

void DecodeGraph::release() noexcept {
  // The caching allocator only orders frees after the caller's streams: finish
  // the graph's work before our buffers can be handed out again (launches of
  // one graph run in order, so the last one's end is the end of all).
  if (done_) check_noexcept(cudaEventSynchronize(done_), "cudaEventSynchronize");
  check_noexcept(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (exec_) check_noexcept(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
  if (graph_) check_noexcept(cudaGraphDestroy(graph_), "cudaGraphDestroy");
  if (done_) check_noexcept(cudaEventDestroy(done_), "cudaEventDestroy");
  exec_ = nullptr, graph_ = nullptr, done_ = nullptr;
}

void DecodeGraph::replay(int64_t len) { replay(std::vector<int64_t>(size_t(shape_.B), len)); }

void DecodeGraph::replay(const std::vector<int64_t>& lens) {
  TORCH_CHECK(int64_t(lens.size()) == shape_.B, "DecodeGraph::replay: ", lens.size(), " lengths for B=", shape_.B);
  for (int64_t len : lens)
    TORCH_CHECK(len >= 1 && len <= shape_.capacity, "DecodeGraph::replay: length ", len, " outside [1, ",
                shape_.capacity, "]");
  c10::cuda::CUDAGuard guard(stream_.device_index());
  const cudaStream_t caller = at::cuda::getCurrentCUDAStream(stream_.device_index()).stream();
  // The length kernels' new arguments, copied at the launch below: no wait for
  // the previous replay (decode_lengths.h).
  for (size_t c = 0; c < length_nodes_.size(); ++c) {
    DecodeLengths chunk = lengths_chunk(in_.len.data_ptr<int>(), lens, int64_t(c) * kLengthsPerLaunch);
    void* args[] = {&chunk};
    cudaKernelNodeParams kp{};
    kp.func = const_cast<void*>(decode_lengths_kernel());
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(kLengthsPerLaunch);
    kp.kernelParams = args;
    NSA_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec_, length_nodes_[c], &kp));
  }
  NSA_CUDA_CHECK(cudaGraphLaunch(exec_, caller));  // after the caller's writes; its next reads after it
  NSA_CUDA_CHECK(cudaEventRecord(done_, caller));
}

}  // namespace nsa::cuda
