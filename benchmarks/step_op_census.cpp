// Where a training step's small kernels come from: every ATen operator call of
// one eager training step, counted by where it ran — the autograd node whose
// backward called it, the model phase of the forward, or the autograd engine
// itself between nodes (a gradient summed from two uses of one tensor) — and by
// the leaf operator that launched the work, its dtype and first input's shape.
// On a GPU each such leaf call is about one kernel (views and allocations are
// left out; cuBLAS may add a split-K reduction), so the table says which part
// of the model to fuse to remove the step's ~1 µs-to-7 µs kernels; a CUPTI
// trace has the kernels but not who called them.
//   build/benchmarks/step_op_census [config] [batch] [seq_len] [device] [precision] [top]
// Defaults: m7c_125m 8 2048 cuda (cpu where no GPU) bf16 60. Step 1 warms up
// (lazy buffers, the weight copies' first fill); step 2 is counted.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nsa/config.h"
#include "nsa/data.h"
#include "nsa/model.h"
#include "nsa/runtime.h"
#include "nsa/trainer.h"
#if NSA_BENCH_WITH_CUDA_KERNELS
#include "nsa/cuda/layer_routing.h"
#endif

namespace {

// A leaf call's place: where it ran, the outermost operator it was called
// from, the leaf itself, and its first tensor input.
struct Site {
  std::string where, top, leaf, dtype, shape;
  bool operator<(const Site& o) const {
    return std::tie(where, top, leaf, dtype, shape) < std::tie(o.where, o.top, o.leaf, o.dtype, o.shape);
  }
};

std::mutex g_mu;
std::map<Site, int64_t> g_counts;
bool g_counting = false;
std::string g_phase = "step";  // the forward's current model phase (main thread)

// The first tensor input of a call, read on entry (the inputs are gone by the
// exit) as plain values and formatted only if the call turns out a leaf: most
// calls are not, and formatting every one cost more than the counting.
struct FirstInput {
  bool present = false;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  c10::SmallVector<int64_t, 6> sizes;
  bool contiguous = true;
};
struct Frame {
  std::string name;
  bool backward_node;  // an autograd node's scope, not an operator
  bool had_child = false;
  FirstInput input;
};
thread_local std::vector<Frame> t_stack;

// Leaves that only make metadata (views, empty allocations; a `to` or
// `contiguous` that had nothing to convert reaches here as a leaf, one that
// copied has a copy_ under it): no kernel, not counted.
bool launches_nothing(const std::string& op) {
  static const char* const kNames[] = {
      "aten::as_strided", "aten::view", "aten::_reshape_alias", "aten::empty", "aten::empty_strided",
      "aten::resize_", "aten::resolve_conj", "aten::resolve_neg", "aten::alias", "aten::unsqueeze", "aten::squeeze",
      "aten::t", "aten::transpose", "aten::permute", "aten::expand", "aten::slice", "aten::select", "aten::narrow",
      "aten::split", "aten::split_with_sizes", "aten::detach", "aten::_unsafe_view", "aten::lift_fresh",
      "aten::unfold", "aten::diagonal", "aten::chunk", "aten::unbind", "aten::_local_scalar_dense", "aten::is_nonzero",
      "aten::result_type", "aten::set_", "aten::record_stream", "aten::to", "aten::contiguous", "aten::reshape",
      "aten::flatten", "aten::view_as", "aten::expand_as", "aten::type_as", "aten::detach_", "detach"};
  for (const char* n : kNames)
    if (op == n) return true;
  return false;
}

FirstInput first_tensor(const at::RecordFunction& fn) {
  FirstInput in;
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) continue;
    in.present = true;
    in.dtype = t.scalar_type();
    in.sizes.assign(t.sizes().begin(), t.sizes().end());
    in.contiguous = t.is_contiguous();
    break;
  }
  return in;
}

// dtype and "[d0,d1,...]" (" strided" when not contiguous); empty without a tensor input.
void format_input(const FirstInput& in, std::string* dtype, std::string* shape) {
  if (!in.present) return;
  *dtype = std::string(c10::toString(in.dtype));
  std::string s = "[";
  for (size_t i = 0; i < in.sizes.size(); ++i) s += (i ? "," : "") + std::to_string(in.sizes[i]);
  *shape = s + (in.contiguous ? "]" : "] strided");
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (!t_stack.empty()) t_stack.back().had_child = true;
  Frame f{fn.name(), fn.scope() == at::RecordScope::BACKWARD_FUNCTION};
  if (g_counting && !f.backward_node) f.input = first_tensor(fn);
  t_stack.push_back(std::move(f));
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  if (t_stack.empty()) return;
  const Frame f = std::move(t_stack.back());
  t_stack.pop_back();
  if (f.had_child || f.backward_node || !g_counting || launches_nothing(f.name)) return;
  Site s;
  s.leaf = f.name;
  // The innermost autograd node, and the outermost operator under it.
  int node = -1;
  for (int i = int(t_stack.size()) - 1; i >= 0; --i)
    if (t_stack[i].backward_node) {
      node = i;
      break;
    }
  for (size_t i = node + 1; i < t_stack.size(); ++i)
    if (!t_stack[i].backward_node) {
      s.top = t_stack[i].name;
      break;
    }
  if (node >= 0) {
    s.where = "backward: " + t_stack[node].name;
  } else {
    // No node: the forward on the main thread, or the engine between nodes
    // (an autograd thread summing a gradient's two contributions).
    static const std::thread::id main_thread = std::this_thread::get_id();
    // (On the CPU the engine runs on the main thread, inside the backward phase.)
    const bool engine = std::this_thread::get_id() != main_thread || g_phase == "backward";
    s.where = engine ? "backward: (engine, between nodes)" : g_phase;
  }
  format_input(f.input, &s.dtype, &s.shape);
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_counts[s];
}

// The forward's phases (forward > layer > attention ...), named as the harness
// names them, so a forward call says which part of the layer made it.
class PhaseNames : public nsa::Observer {
 public:
  void phase_begin(std::string_view name, int layer) override {
    stack_.push_back(std::string(name) + (layer >= 0 ? " " + std::to_string(layer) : ""));
    g_phase = joined();
  }
  void phase_end(std::string_view, int) override {
    if (!stack_.empty()) stack_.pop_back();
    g_phase = joined();
  }

 private:
  // Layer numbers dropped: every layer makes the same calls.
  std::string joined() const {
    std::string s;
    for (const auto& p : stack_) {
      std::string q = p;
      while (!q.empty() && (std::isdigit(static_cast<unsigned char>(q.back())) || q.back() == ' ')) q.pop_back();
      s += (s.empty() ? "" : "/") + q;
    }
    return s.empty() ? "step" : s;
  }
  std::vector<std::string> stack_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 1 ? argv[1] : "m7c_125m";
  const int batch = argc > 2 ? std::atoi(argv[2]) : 8;
  const int seq_len = argc > 3 ? std::atoi(argv[3]) : 2048;
  const bool cuda_present = at::hasCUDA() && c10::cuda::device_count() > 0;
  const std::string device = argc > 4 ? argv[4] : (cuda_present ? "cuda" : "cpu");
  const std::string precision = argc > 5 ? argv[5] : "bf16";
  const size_t top = argc > 6 ? std::strtoul(argv[6], nullptr, 10) : 60;
  if (device == "cuda" && !cuda_present) {
    std::fprintf(stderr, "step_op_census: no CUDA device\n");
    return 4;
  }
#if NSA_BENCH_WITH_CUDA_KERNELS
  nsa::cuda::register_with_layer();
#endif
  nsa::ModelConfig mc = nsa::load_model_config(config);
  nsa::TrainConfig tc;
  tc.steps = 2, tc.precision = nsa::precision_from_string(precision);
  const at::Device dev = device == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  at::manual_seed(1);
  nsa::Model m(mc, at::TensorOptions().dtype(nsa::param_dtype_for(tc)).device(dev));
  nsa::Trainer trainer(m, tc);
  nsa::DataSource data("synthetic", 7);
  PhaseNames phases;
  nsa::Runtime rt;
  rt.observer = &phases;
  rt.resolve();

  at::RecordFunctionCallback cb(on_enter, on_exit);
  cb.needsInputs(true);
  const at::CallbackHandle handle = at::addGlobalCallback(cb);
  for (int step = 1; step <= 2; ++step) {
    g_counting = step == 2;
    const at::Tensor b = data.next_batch(batch, seq_len).to(dev);
    trainer.step(step, b, rt, /*may_replay=*/false);
  }
  at::removeCallback(handle);

  std::vector<std::pair<int64_t, Site>> rows;
  int64_t total = 0;
  std::map<std::string, int64_t> by_where;
  for (const auto& [s, n] : g_counts) rows.emplace_back(n, s), total += n, by_where[s.where] += n;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::printf("%s, batch %d, S %d, %s, %s: %lld calls of leaf operators that launch work (views and empty allocations left out) in one training step\n\n", config.c_str(), batch,
              seq_len, device.c_str(), precision.c_str(), static_cast<long long>(total));
  std::printf("| where | calls |\n|---|---|\n");
  std::vector<std::pair<int64_t, std::string>> w;
  for (const auto& [k, n] : by_where) w.emplace_back(n, k);
  std::sort(w.rbegin(), w.rend());
  for (const auto& [n, k] : w) std::printf("| %s | %lld |\n", k.c_str(), static_cast<long long>(n));
  std::printf("\n| calls | where | outermost op | leaf op | dtype | first input |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const Site& s = rows[i].second;
    std::printf("| %lld | %s | %s | %s | %s | %s |\n", static_cast<long long>(rows[i].first), s.where.c_str(),
                s.top.c_str(), s.leaf.c_str(), s.dtype.c_str(), s.shape.c_str());
  }
  return 0;
}
