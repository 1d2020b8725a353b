#include "nsa/cuda/window_cudnn.h"

#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/custom_function.h>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/window_library.h"

namespace nsa::cuda {
namespace {

namespace fe = cudnn_frontend;

// The tensors of both graphs, by the ids cuDNN's variant pack binds pointers to.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

// One cuDNN graph per call shape: cuDNN plans are built for fixed dims and
// strides, so the key is everything the graph was built from.
struct PlanKey {
  int device;
  at::ScalarType dtype;
  int64_t B, S, H, G, dk, dv, window;
  double scale;
  bool backward;
  bool deterministic;  // backward: cuDNN's deterministic dq (no float atomics)
  auto tie() const { return std::tie(device, dtype, B, S, H, G, dk, dv, window, scale, backward, deterministic); }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null when cuDNN declined
  int64_t workspace = 0;
  std::string declined;  // cuDNN's reason, when it declined
};

// Our tensors are [B, S, heads, d] in memory; cuDNN names attention tensors in
// [b, h, s, d] order, so the same memory is those dims with these strides.
fe::graph::Tensor_attributes bshd(const char* name, Uid uid, int64_t B, int64_t S, int64_t heads, int64_t d) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({B, heads, S, d})
      .set_stride({S * heads * d, d, heads * d, 1});
}
// The forward's logsumexp, fp32, one per (b, h, s). The forward writes it in
// our layout, [B, S, H] (ForwardResult::lse), so our backward reads it as it
// is; cuDNN's backward (below 9.26) takes only packed [B, H, S].
fe::graph::Tensor_attributes stats(int64_t B, int64_t S, int64_t H, bool bhs) {
  return fe::graph::Tensor_attributes()
      .set_name("Stats")
      .set_uid(kStats)
      .set_dim({B, H, S, 1})
      .set_stride(bhs ? std::vector<int64_t>{H * S, S, 1, 1} : std::vector<int64_t>{S * H, 1, H, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

// The mask both graphs share: causal (key <= query) and, when the window is
// shorter than the sequence, a band of `window` keys (cuDNN's left bound w
// keeps keys k with query - w < k, the window's [t - w + 1, t]).
template <class Attributes>
void window_mask(Attributes& a, const PlanKey& s) {
  a.set_causal_mask(true).set_attn_scale(float(s.scale));
  if (s.window < s.S) a.set_diagonal_band_left_bound(int(s.window));
}

Plan build(const PlanKey& s, cudnnHandle_t handle) {
  // The frontend is compiled against the wheel's cudnn.h; another libcudnn in
  // the process would take graphs its headers do not describe.
  if (cudnnGetVersion() != CUDNN_VERSION)
    return Plan{nullptr, 0,
                "the loaded cuDNN is " + std::to_string(cudnnGetVersion()) + ", its headers here " +
                    std::to_string(CUDNN_VERSION) + " (" + cudnn_library_path() + ")"};
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(s.dtype == at::kHalf ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = g->tensor(bshd("Q", kQ, s.B, s.S, s.H, s.dk));
  auto K = g->tensor(bshd("K", kK, s.B, s.S, s.G, s.dk));
  auto V = g->tensor(bshd("V", kV, s.B, s.S, s.G, s.dv));
  auto out = [&](const std::shared_ptr<fe::graph::Tensor_attributes>& t, const fe::graph::Tensor_attributes& like) {
    t->set_output(true).set_uid(like.get_uid()).set_dim(like.get_dim()).set_stride(like.get_stride());
  };
  if (!s.backward) {
    auto a = fe::graph::SDPA_attributes().set_name("nsa_window").set_generate_stats(true);
    window_mask(a, s);
    auto [O, Stats] = g->sdpa(Q, K, V, a);
    out(O, bshd("O", kO, s.B, s.S, s.H, s.dv));
    out(Stats, stats(s.B, s.S, s.H, /*bhs=*/false));
    Stats->set_data_type(fe::DataType_t::FLOAT);
  } else {
    auto O = g->tensor(bshd("O", kO, s.B, s.S, s.H, s.dv));
    auto dO = g->tensor(bshd("dO", kDO, s.B, s.S, s.H, s.dv));
    auto Stats = g->tensor(stats(s.B, s.S, s.H, /*bhs=*/true));
    auto a = fe::graph::SDPA_backward_attributes()
                 .set_name("nsa_window_backward")
                 .set_deterministic_algorithm(s.deterministic);
    window_mask(a, s);
    auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, a);
    out(dQ, bshd("dQ", kDQ, s.B, s.S, s.H, s.dk));
    out(dK, bshd("dK", kDK, s.B, s.S, s.G, s.dk));
    out(dV, bshd("dV", kDV, s.B, s.S, s.G, s.dv));
  }
  Plan p;
  fe::error_t e = g->validate();
  if (e.is_good()) e = g->build_operation_graph(handle);
  if (e.is_good()) e = g->create_execution_plans({fe::HeurMode_t::A});
  if (e.is_good()) e = g->check_support(handle);
  if (e.is_good()) e = g->build_plans(handle);
  if (e.is_good()) e = g->get_workspace_size(p.workspace);
  if (!e.is_good()) {
    p.declined = std::string("cuDNN declines the ") + (s.backward ? "backward" : "forward") + ": " + e.get_message();
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
const Plan& plan_for(const PlanKey& key) {
  static std::mutex mu;
  static std::map<PlanKey, Plan> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TORCH_CHECK(cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(), &capture) == cudaSuccess,
              "cudaStreamIsCapturing failed");
  if (capture != cudaStreamCaptureStatusNone) {
    static const Plan kInCapture{nullptr, 0, "no cuDNN plan built for this shape before the CUDA graph capture"};
    return kInCapture;
  }
  return plans.emplace(key, build(key, handle_on_current_stream())).first->second;
}

// `backward`: the key of cuDNN's backward graph for that choice; nullopt: of the
// forward graph, which is the same for every choice (one plan serves them all).
PlanKey key_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window, double scale,
               std::optional<CudnnWindowBackward> backward) {
  const bool deterministic = backward == CudnnWindowBackward::cudnn_deterministic;
  return PlanKey{q.get_device(), q.scalar_type(), q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3),
                 window,         scale,           backward.has_value(),  deterministic};
}

void execute(const Plan& p, std::unordered_map<int64_t, void*> pack, const at::Tensor& like) {
  TORCH_CHECK(p.graph, p.declined);
  const at::Tensor workspace = at::empty({std::max<int64_t>(p.workspace, 1)}, like.options().dtype(at::kByte));
  fe::error_t e = p.graph->execute(handle_on_current_stream(), pack, workspace.data_ptr());
  TORCH_CHECK(e.is_good(), "cuDNN window attention failed: ", e.get_message());
}

}  // namespace

ForwardResult cudnn_window_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                   double scale) {
  // cuDNN's handle and plans are per device: the current one must be q's.
  const c10::cuda::CUDAGuard guard(q.device());
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2);
  ForwardResult r;
  r.o = at::empty({B, S, H, v.size(3)}, q.options());
  r.lse = at::empty({B, S, H}, q.options().dtype(at::kFloat));
  execute(plan_for(key_of(q, k, v, window, scale, std::nullopt)),
          {{kQ, q.data_ptr()}, {kK, k.data_ptr()}, {kV, v.data_ptr()}, {kO, r.o.data_ptr()}, {kStats, r.lse.data_ptr()}},
          q);
  return r;
}

namespace {

struct CudnnWindowFn : torch::autograd::Function<CudnnWindowFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, int64_t window, double scale, CudnnWindowBackward backward,
                            int64_t dq) {
    auto [o, lse] = cudnn_window_forward(q, k, v, window, scale);
    ctx->save_for_backward({q, k, v, o, lse});
    ctx->saved_data["window"] = window;
    ctx->saved_data["scale"] = scale;
    // The backward is the one asked for with this forward, whatever is asked
    // of later calls before it runs.
    ctx->saved_data["backward"] = int64_t(backward);
    ctx->saved_data["dq"] = dq;
    return o;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor none;  // no gradient for window, scale, backward
    if (!grads[0].defined()) return {none, none, none, none, none, none, none};
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &o = saved[3], &lse = saved[4];
    const int64_t window = ctx->saved_data["window"].toInt();
    const double scale = ctx->saved_data["scale"].toDouble();
    const auto backward = CudnnWindowBackward(ctx->saved_data["backward"].toInt());
    const at::Tensor dout = grads[0].contiguous();
    const c10::cuda::CUDAGuard guard(q.device());
    if (backward == CudnnWindowBackward::ours) {
      BranchSpec spec;
      spec.branch = Branch::Window, spec.window = window, spec.scale = scale;
      spec.dq = BackwardDq(ctx->saved_data["dq"].toInt());
      Gradients g = attention_backward(q, k, v, o, lse, dout, spec);
      return {g.dq, g.dk, g.dv, none, none, none, none};
    }
    at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    const at::Tensor lse_bhs = lse.permute({0, 2, 1}).contiguous();
    execute(plan_for(key_of(q, k, v, window, scale, backward)),
            {{kQ, q.data_ptr()},
             {kK, k.data_ptr()},
             {kV, v.data_ptr()},
             {kO, o.data_ptr()},
             {kStats, lse_bhs.data_ptr()},
             {kDO, dout.data_ptr()},
             {kDQ, dq.data_ptr()},
             {kDK, dk.data_ptr()},
             {kDV, dv.data_ptr()}},
            q);
    return {dq, dk, dv, none, none, none, none};
  }
};

}  // namespace

std::string cudnn_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudnnGetVersion), &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

CudnnWindowBackward parse_cudnn_window_backward(std::string_view value) {
  if (value == "ours") return CudnnWindowBackward::ours;
  if (value == "cudnn") return CudnnWindowBackward::cudnn_deterministic;
  TORCH_CHECK(value == "cudnn_atomic", "NSA_WINDOW_BWD: expected ours, cudnn or cudnn_atomic, got '", value, "'");
  return CudnnWindowBackward::cudnn_atomic;
}

std::string cudnn_window_declines(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  CudnnWindowBackward backward) {
  if (std::string why = window_library_declines(q, k, v, window); !why.empty()) return why;
  if (k.size(3) != q.size(3)) return "q and k head dims differ";
  // Our backward (the default after cuDNN's forward) tiles head dims in
  // multiples of 16 (nsa_cuda.h).
  const bool ours = backward == CudnnWindowBackward::ours;
  if (ours && (q.size(3) % 16 != 0 || v.size(3) % 16 != 0)) return "head dims are not multiples of 16 (our backward)";
  // cuDNN's engines are asked with the scale the layer uses (1/sqrt(dk)); the
  // answer does not depend on the scale's value.
  const double scale = 1.0 / std::sqrt(double(q.size(3)));
  const c10::cuda::CUDAGuard guard(q.device());
  for (const auto graph : {std::optional<CudnnWindowBackward>(), std::optional(backward)}) {
    if (graph && ours) break;
    const Plan& p = plan_for(key_of(q, k, v, window, scale, graph));
    if (!p.graph) return p.declined;
  }
  return "";
}

at::Tensor cudnn_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                                  double scale, CudnnWindowBackward backward, BackwardDq dq) {
  return CudnnWindowFn::apply(q.contiguous(), k.contiguous(), v.contiguous(), window, scale, backward, int64_t(dq));
}

}  // namespace nsa::cuda
