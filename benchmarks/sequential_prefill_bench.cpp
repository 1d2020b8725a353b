// What the sequential prefill (nsa_decode.cpp: token by token through the
// decode step, under autograd) costs per token in one m7c_125m layer: wall
// time, and ATen operator calls forward and backward, counted with a
// RecordFunction callback. On a GPU each call is at least one kernel launch
// paid on the host, so operator calls per token are what the seed matrix's
// sequential cells spend their time on there; the count is the same on the CPU.
//   build/benchmarks/sequential_prefill_bench --benchmark_format=json
// Args: S, dtype (0 = fp32, 1 = bf16), device (0 = CPU, 1 = CUDA when present),
// route on CUDA (0 = the ATen decode step, 1 = the decode kernels,
// NSA_USE_CUDA_DECODE; CUDA builds only).
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "nsa/config.h"
#include "nsa/nsa_layer.h"
#include "nsa/nsa_weights.h"
#include "nsa/runtime.h"
#if NSA_BENCH_WITH_CUDA_KERNELS
#include "nsa/cuda/layer_routing.h"
#endif

namespace {

std::atomic<int64_t> g_ops{0};
// With SEQ_PREFILL_TOP_OPS=N set, the N most called operators of the last
// forward and backward are printed (where the calls go).
std::map<std::string, int64_t> g_names;
bool g_record_names = false;

void print_top(const char* what, int64_t S) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (auto& [name, n] : g_names) v.emplace_back(n, name);
  std::sort(v.rbegin(), v.rend());
  const char* env = std::getenv("SEQ_PREFILL_TOP_OPS");
  const size_t top = std::min(v.size(), static_cast<size_t>(std::atoi(env)));
  std::fprintf(stderr, "%s, S=%lld, calls per token:\n", what, static_cast<long long>(S));
  for (size_t i = 0; i < top; ++i) std::fprintf(stderr, "  %7.2f %s\n", double(v[i].first) / double(S), v[i].second.c_str());
  g_names.clear();
}

// Counts every ATen operator call on this thread (nested ones too: matmul and
// the mm it calls are two), forward and inside backward formulas alike.
struct OpCounter {
  at::CallbackHandle handle;
  OpCounter() {
    handle = at::addThreadLocalCallback(at::RecordFunctionCallback(
        [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
          g_ops.fetch_add(1, std::memory_order_relaxed);
          if (g_record_names) ++g_names[fn.name()];
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle); }
};

void BM_SequentialPrefillLayer(benchmark::State& state) {
  const int64_t S = state.range(0);
  const auto dtype = state.range(1) == 1 ? at::kBFloat16 : at::kFloat;
  const bool cuda = state.range(2) == 1, kernels = state.range(3) == 1;
  if (cuda && !at::hasCUDA()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  if (kernels && !cuda) {
    state.SkipWithError("the decode kernels run on CUDA only");
    return;
  }
#if NSA_BENCH_WITH_CUDA_KERNELS
  nsa::cuda::register_with_layer();
#else
  if (kernels) {
    state.SkipWithError("built without the CUDA kernels");
    return;
  }
#endif
  const at::Device dev = cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  const nsa::ModelConfig cfg = nsa::load_model_config("m7c_125m");
  at::manual_seed(1);
  const nsa::NsaWeights w = nsa::init_nsa_weights(cfg, at::TensorOptions().dtype(at::kFloat)).to(dev, dtype);
  const at::Tensor x = (at::randn({1, S, cfg.d_model}) * 0.5).to(dev, dtype).requires_grad_(true);
  nsa::Runtime rt;
  rt.flags.set("NSA_USE_CUDA_DECODE", kernels ? "1" : "0");
  rt.resolve();
  int64_t fwd_ops = 0, bwd_ops = 0;
  g_record_names = std::getenv("SEQ_PREFILL_TOP_OPS") != nullptr;
  for (auto _ : state) {
    OpCounter counter;
    g_ops = 0;
    g_names.clear();
    const at::Tensor y = nsa::nsa_attention(w, x, cfg, rt, 0, nsa::Path::sequential);
    fwd_ops = g_ops.exchange(0);
    if (g_record_names) print_top("forward", S);
    const at::Tensor loss = y.to(at::kFloat).square().mean();
    const at::Tensor dx = torch::autograd::grad({loss}, {x})[0];
    bwd_ops = g_ops.exchange(0);
    if (g_record_names) print_top("backward", S);
    benchmark::DoNotOptimize(dx.abs().max().item<double>());  // waits for the device
  }
  state.counters["ops_fwd_per_token"] = double(fwd_ops) / double(S);
  state.counters["ops_bwd_per_token"] = double(bwd_ops) / double(S);
  state.counters["ms_per_token"] =
      benchmark::Counter(double(S) * 1e-3, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SequentialPrefillLayer)
    ->ArgsProduct({{128, 512, 2048}, {0, 1}, {0, 1}, {0, 1}})
    ->ArgNames({"S", "bf16", "cuda", "kernels"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
