#include "nsa/cuda/cudnn_sdpa.h"

#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>

namespace nsa::cuda {
namespace {

namespace fe = cudnn_frontend;

// The tensors of both graphs, by the ids cuDNN's variant pack binds pointers to.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null when cuDNN declined
  int64_t workspace = 0;
  std::string declined;  // cuDNN's reason, when it declined
};

fe::graph::Tensor_attributes tensor(const char* name, Uid uid, const SdpaLayout& l) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({l.dim.begin(), l.dim.end()})
      .set_stride({l.stride.begin(), l.stride.end()});
}

// The mask both graphs share: causal from the top-left corner (key <= query,
// rows and keys counted from 0 in the call's own s dims) and, when asked, a band
// of `window` keys (cuDNN's left bound w keeps keys k with query - w < k).
template <class Attributes>
void mask(Attributes& a, const SdpaCall& c) {
  a.set_causal_mask(true).set_attn_scale(float(c.scale));
  if (c.window > 0) a.set_diagonal_band_left_bound(int(c.window));
}

Plan build(const SdpaCall& c, cudnnHandle_t handle) {
  // The frontend is compiled against the wheel's cudnn.h; another libcudnn in
  // the process would take graphs its headers do not describe.
  if (cudnnGetVersion() != CUDNN_VERSION)
    return Plan{nullptr, 0,
                "the loaded cuDNN is " + std::to_string(cudnnGetVersion()) + ", its headers here " +
                    std::to_string(CUDNN_VERSION) + " (" + cudnn_library_path() + ")"};
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(c.dtype == at::kHalf ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = g->tensor(tensor("Q", kQ, c.q));
  auto K = g->tensor(tensor("K", kK, c.k));
  auto V = g->tensor(tensor("V", kV, c.v));
  auto out = [](const std::shared_ptr<fe::graph::Tensor_attributes>& t, Uid uid, const SdpaLayout& l) {
    t->set_output(true).set_uid(uid).set_dim({l.dim.begin(), l.dim.end()}).set_stride({l.stride.begin(), l.stride.end()});
  };
  if (!c.backward) {
    auto a = fe::graph::SDPA_attributes().set_name("nsa_sdpa").set_generate_stats(true);
    mask(a, c);
    auto [O, Stats] = g->sdpa(Q, K, V, a);
    out(O, kO, c.o);
    out(Stats, kStats, c.stats);
    Stats->set_data_type(fe::DataType_t::FLOAT);
  } else {
    auto O = g->tensor(tensor("O", kO, c.o));
    auto dO = g->tensor(tensor("dO", kDO, c.o));
    auto Stats = g->tensor(tensor("Stats", kStats, c.stats).set_data_type(fe::DataType_t::FLOAT));
    auto a = fe::graph::SDPA_backward_attributes().set_name("nsa_sdpa_backward").set_deterministic_algorithm(
        c.deterministic);
    mask(a, c);
    auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, a);
    out(dQ, kDQ, c.q);
    out(dK, kDK, c.k);
    out(dV, kDV, c.v);
  }
  Plan p;
  fe::error_t e = g->validate();
  if (e.is_good()) e = g->build_operation_graph(handle);
  if (e.is_good()) e = g->create_execution_plans({fe::HeurMode_t::A});
  if (e.is_good()) e = g->check_support(handle);
  if (e.is_good()) e = g->build_plans(handle);
  if (e.is_good()) e = g->get_workspace_size(p.workspace);
  if (!e.is_good()) {
    p.declined = std::string("cuDNN declines the ") + (c.backward ? "backward" : "forward") + ": " + e.get_message();
    return p;
  }
  p.graph = std::move(g);
  return p;
}

cudnnHandle_t handle_on_current_stream() {
  cudnnHandle_t h = at::native::getCudnnHandle();
  TORCH_CHECK(cudnnSetStream(h, at::cuda::getCurrentCUDAStream()) == CUDNN_STATUS_SUCCESS, "cudnnSetStream failed");
  return h;
}

// Plans live for the process (a handful of shapes per run). Building one
// compiles kernels and may synchronize, which a CUDA graph capture forbids: a
// shape first met inside a capture is declined (the layer then runs our kernel).
const Plan& plan_for(const SdpaCall& call) {
  static std::mutex mu;
  static std::map<SdpaCall, Plan> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(call);
  if (it != plans.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TORCH_CHECK(cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(), &capture) == cudaSuccess,
              "cudaStreamIsCapturing failed");
  if (capture != cudaStreamCaptureStatusNone) {
    static const Plan kInCapture{nullptr, 0, "no cuDNN plan built for this shape before the CUDA graph capture"};
    return kInCapture;
  }
  return plans.emplace(call, build(call, handle_on_current_stream())).first->second;
}

}  // namespace

CudnnBackward parse_cudnn_backward(std::string_view flag, std::string_view value) {
  if (value == "ours") return CudnnBackward::ours;
  if (value == "cudnn") return CudnnBackward::cudnn_deterministic;
  TORCH_CHECK(value == "cudnn_atomic", flag, ": expected ours, cudnn or cudnn_atomic, got '", value, "'");
  return CudnnBackward::cudnn_atomic;
}

SdpaLayout bshd_layout(int64_t B, int64_t S, int64_t heads, int64_t d) {
  return SdpaLayout{{B, heads, S, d}, {S * heads * d, d, heads * d, 1}};
}

std::string sdpa_declines(const SdpaCall& call) { return plan_for(call).declined; }

void sdpa_run(const SdpaCall& call, const SdpaPointers& ptr, const at::Tensor& like) {
  const Plan& p = plan_for(call);
  TORCH_CHECK(p.graph, p.declined);
  std::unordered_map<int64_t, void*> pack = {{kQ, const_cast<void*>(ptr.q)},
                                             {kK, const_cast<void*>(ptr.k)},
                                             {kV, const_cast<void*>(ptr.v)},
                                             {kO, ptr.o},
                                             {kStats, ptr.stats}};
  if (call.backward) {
    pack[kDO] = const_cast<void*>(ptr.dout);
    pack[kDQ] = ptr.dq, pack[kDK] = ptr.dk, pack[kDV] = ptr.dv;
  }
  const at::Tensor workspace = at::empty({std::max<int64_t>(p.workspace, 1)}, like.options().dtype(at::kByte));
  fe::error_t e = p.graph->execute(handle_on_current_stream(), pack, workspace.data_ptr());
  TORCH_CHECK(e.is_good(), "cuDNN attention failed: ", e.get_message());
}

std::string cudnn_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudnnGetVersion), &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

}  // namespace nsa::cuda
