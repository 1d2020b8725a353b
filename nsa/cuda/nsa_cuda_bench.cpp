// Benchmarks of the NSA branch kernels vs dense causal attention (SDPA), on the
// same GPU, through the same launchers the tests check.
//
//   nsa_cuda_bench --benchmark_format=json > bench.json
//   nsa_cuda_bench --benchmark_filter='Window|Dense'
//
// Args: {shape, S}; shape 0 = paper_kernel (B=1, G=4, H=64, dk=192, dv=128),
// 1 = m7c_125m (B=1, G=2, H=12, dk=dv=64); NSA l=32, d=16, l'=64, n=16, w=512.
// The attention benchmarks (BM_{Window,Selected,Compressed}{Fwd,Bwd},
// BM_LayerAttention*) take a third arg v: 1 = v1 kernels forced
// (set_force_v1_kernels), 2 = the default dispatch (tensor-core v2 forward and
// dq where they tile; dk/dv are v1 in both), so one run times both side by
// side; v:2 reports speedup_vs_v1 when its v:1 twin ran first, e.g.
//   nsa_cuda_bench --benchmark_filter='Fwd/shape:1/S:8192/'
// Time: CUDA events around each iteration after a warm-up call (manual time);
// counter ms = median over the iterations.
//
// FLOPs of useful work (the napkin math): a row (query, head) that attends to N
// keys costs 2*N*(dk + dv) forward (q.k and p.v) and 2*N*(3*dk + 2*dv) backward
// (recompute q.k, dO.v, then dq, dk, dv). N per row: window min(t+1, w);
// compressed n_cmp(t); selected the selected tokens <= t (from the actual
// block_idx); dense causal t+1. select_blocks counts 2*n_cmp(t)*dk per row.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAGuard.h>
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include "nsa/cuda/attention_ranges.h"
#include "nsa/cuda/compressed_cudnn.h"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/decode_graph.h"
#include "nsa/cuda/forked_stream.h"
#include "nsa/cuda/gate_combine.h"
#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/projection_epilogue.h"
#include "nsa/cuda/reverse_index.h"
#include "nsa/cuda/window_cudnn.h"
#include "nsa/cuda/window_flash.h"
#include "nsa/determinism.h"
#include "nsa/device_peak.h"
#include "nsa/model.h"
#include "nsa/nsa_ops.h"

namespace nsa::cuda {
namespace {

struct Shape {
  const char* name;
  int64_t B, G, H, dk, dv;
};
// Shape 2 is m7c_125m as its training step runs it (batch 8), shape 3 as
// production_125m runs it (batch 4): the dk/dv split rows only.
constexpr Shape kShapes[] = {{"paper_kernel", 1, 4, 64, 192, 128},
                             {"m7c_125m", 1, 2, 12, 64, 64},
                             {"m7c_125m_b8", 8, 2, 12, 64, 64},
                             {"m7c_125m_b4", 4, 2, 12, 64, 64},
                             {"m7c_125m_b64", 64, 2, 12, 64, 64}};  // decode: a batch whose step streams K/V
constexpr int64_t kL = 32, kD = 16, kLp = 64, kN = 16, kW = 512;

// Median milliseconds of `fn`, timed with events into Google Benchmark's manual time.
double time_it(benchmark::State& state, const std::function<void()>& fn) {
  fn();  // warm-up: module load, allocator, cudaFuncSetAttribute
  NSA_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  NSA_CUDA_CHECK(cudaEventCreate(&start));
  NSA_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (auto _ : state) {
    NSA_CUDA_CHECK(cudaEventRecord(start));
    fn();
    NSA_CUDA_CHECK(cudaEventRecord(stop));
    NSA_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0.f;
    NSA_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
    state.SetIterationTime(t / 1e3);
  }
  NSA_CUDA_CHECK(cudaEventDestroy(start));
  NSA_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

// Keys summed over the rows of one head, per branch (host arithmetic, shared
// with the kernels through attention_ranges.h).
double keys_window(int64_t S) {
  double n = 0;
  for (int64_t t = 0; t < S; ++t) n += double(std::min<int64_t>(t + 1, kW));
  return n;
}
double keys_compressed(int64_t S) {
  double n = 0;
  for (int64_t t = 0; t < S; ++t) n += n_cmp_visible(int(t), kL, kD);
  return n;
}
// Selected tokens per (t, g) summed, from the actual block_idx, per head and
// batch element (rows_keys multiplies by B and H; the B=8 rows were counted B
// times over before 2026-11-25).
double keys_selected(const at::Tensor& block_idx) {
  const at::Tensor j = block_idx.to(at::kLong);
  const at::Tensor t = at::arange(block_idx.size(1), j.options()).view({1, -1, 1, 1});
  const at::Tensor len = at::clamp_min(at::minimum((j + 1) * kLp, t + 1) - j * kLp, 0);
  return at::where(j >= 0, len, at::zeros_like(len)).sum().item<double>() /
         double(block_idx.size(0) * block_idx.size(2));
}

struct Problem {
  Shape sh;
  int64_t S, S_cmp;
  double scale;
  at::Tensor q, k, v, kc, vc, dout, block_idx;  // one k/v per branch is not needed for timing
};
Problem make_problem(const benchmark::State& state) {
  Problem p;
  p.sh = kShapes[state.range(0)];
  p.S = state.range(1);
  p.S_cmp = p.S >= kL ? (p.S - kL) / kD + 1 : 0;
  p.scale = 1.0 / std::sqrt(double(p.sh.dk));
  const auto o = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const auto& s = p.sh;
  p.q = at::randn({s.B, p.S, s.H, s.dk}, o);
  p.k = at::randn({s.B, p.S, s.G, s.dk}, o);
  p.v = at::randn({s.B, p.S, s.G, s.dv}, o);
  p.kc = at::randn({s.B, p.S_cmp, s.G, s.dk}, o);
  p.vc = at::randn({s.B, p.S_cmp, s.G, s.dv}, o);
  p.dout = at::randn({s.B, p.S, s.H, s.dv}, o);
  p.block_idx = select_blocks(p.q, p.kc, kL, kD, kLp, kN, p.scale);
  return p;
}

// Dense causal SDPA through ATen (GQA via enable_gqa), [B,H,S,d] views of the
// same tensors. Forward: one call. Backward: backward of one retained graph.
struct Dense {
  at::Tensor q, k, v, o, grad;
  Dense(const Problem& p, bool backward) {
    const auto tr = [](const at::Tensor& x) { return x.transpose(1, 2); };
    q = tr(p.q).detach().requires_grad_(backward);
    k = tr(p.k).detach().requires_grad_(backward);
    v = tr(p.v).detach().requires_grad_(backward);
    grad = tr(p.dout);
    scale = p.scale;
    if (backward) o = forward();
  }
  at::Tensor forward() const { return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, scale, true); }
  void backward() const { o.backward(grad, /*retain_graph=*/true); }
  double scale;
};

// v1 time per (benchmark, shape, S), for the v:2 twin's speedup_vs_v1.
std::map<std::tuple<int, int64_t, int64_t>, double>& v1_cache() {
  static std::map<std::tuple<int, int64_t, int64_t>, double> cache;
  return cache;
}

// Kernel version of a benchmark with the v arg: forces v1 (v = 1) or not for
// its lifetime and records / reports the v1 time of the same (id, shape, S).
class KernelVersion {
 public:
  KernelVersion(benchmark::State& state, int id)
      : state_(state), key_{id, state.range(0), state.range(1)}, v1_(state.range(2) == 1),
        prev_(force_v1_kernels()) {
    set_force_v1_kernels(v1_);
  }
  ~KernelVersion() { set_force_v1_kernels(prev_); }
  KernelVersion(const KernelVersion&) = delete;
  KernelVersion& operator=(const KernelVersion&) = delete;
  void report(double ms) {
    if (v1_) {
      v1_cache()[key_] = ms;
    } else if (auto it = v1_cache().find(key_); it != v1_cache().end() && ms > 0) {
      state_.counters["speedup_vs_v1"] = it->second / ms;
    }
  }

 private:
  benchmark::State& state_;
  std::tuple<int, int64_t, int64_t> key_;
  bool v1_, prev_;
};

// Dense time per (shape, S, direction): measured by BM_DenseSdpa* when they ran
// first, else here once (median of 5 after a warm-up).
// Keyed by everything the dense problem's size depends on: the m7c training
// shape (batch 8) and m7c at batch 1 share heads and S but not the time.
using DenseKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool>;
std::map<DenseKey, double>& dense_cache() {
  static std::map<DenseKey, double> cache;
  return cache;
}
DenseKey dense_key(const Problem& p, bool backward) { return {p.sh.B, p.sh.H, p.sh.dk, p.S, backward}; }
double dense_ms(const Problem& p, bool backward) {
  if (auto it = dense_cache().find(dense_key(p, backward)); it != dense_cache().end()) return it->second;
  const Dense d(p, backward);
  std::vector<float> ms;
  cudaEvent_t a, b;
  NSA_CUDA_CHECK(cudaEventCreate(&a));
  NSA_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 6; ++i) {  // the first is the warm-up
    NSA_CUDA_CHECK(cudaEventRecord(a));
    if (backward) d.backward(); else d.forward();
    NSA_CUDA_CHECK(cudaEventRecord(b));
    NSA_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    NSA_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    if (i > 0) ms.push_back(t);
  }
  NSA_CUDA_CHECK(cudaEventDestroy(a));
  NSA_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return dense_cache()[dense_key(p, backward)] = ms[ms.size() / 2];
}

// The device's dense bf16 tensor-core peak (nsa/device_peak.h), asked once.
const nsa::TensorPeak& device_bf16_peak() {
  static const nsa::TensorPeak peak = [] {
    int dev = 0, khz = 0;
    NSA_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    NSA_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    NSA_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    return nsa::dense_bf16_peak(prop.name, prop.major, prop.minor, prop.multiProcessorCount, khz);
  }();
  return peak;
}

// Counters of a timed run: ms, TFLOP/s of useful work, peak_share = that as a
// share of the GPU's dense bf16 peak (where the peak is known; the benchmark
// context names it and its source), speedup_vs_sdpa.
void report(benchmark::State& state, double ms, double flops, double dense) {
  state.counters["ms"] = ms;
  const double tflops = ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0;
  state.counters["TFLOP/s"] = tflops;
  if (const nsa::TensorPeak& peak = device_bf16_peak(); peak.tflops > 0) state.counters["peak_share"] = tflops / peak.tflops;
  if (dense > 0) state.counters["speedup_vs_sdpa"] = dense / ms;
}

bool require_device(benchmark::State& state) {
  if (kernels_available()) return true;
  state.SkipWithError(("no CUDA device: " + unavailable_reason()).c_str());
  return false;
}

enum class Which { Window, Compressed, Selected };
double rows_keys(const Problem& p, Which w) {
  const double per_head = w == Which::Window       ? keys_window(p.S)
                          : w == Which::Compressed ? keys_compressed(p.S)
                                                   : keys_selected(p.block_idx);
  return per_head * double(p.sh.B * p.sh.H);
}
// One benchmark row's setting of a process-wide kernel choice (a tiling, a
// dq path, the streams): set for the row, the previous value back when the
// row ends, however it ends, so later rows see the defaults.
template <typename T>
class ScopedChoice {
 public:
  ScopedChoice(T previous, std::function<void(T)> set, T value) : set_(std::move(set)), previous_(previous) {
    set_(value);
  }
  // A choice kept in a variable of the benchmark's own.
  ScopedChoice(T& variable, T value) : ScopedChoice(variable, [&variable](T v) { variable = v; }, value) {}
  ~ScopedChoice() { set_(previous_); }
  ScopedChoice(const ScopedChoice&) = delete;
  ScopedChoice& operator=(const ScopedChoice&) = delete;

 private:
  std::function<void(T)> set_;
  T previous_;
};

// How each branch's backward makes dq in every benchmark (the default: its own
// kernel), by Which; BM_*BwdDq sets its branch's, BM_LayerFwdBwdDq the selected
// branch's (as the layer's NSA_SELECTED_DQ does).
BackwardDq g_backward_dq[3] = {BackwardDq::kernel, BackwardDq::kernel, BackwardDq::kernel};
BranchSpec spec_for(const Problem& p, Which w) {
  BranchSpec s;
  s.scale = p.scale;
  s.dq = g_backward_dq[int(w)];
  if (w == Which::Window) s.branch = Branch::Window, s.window = kW;
  if (w == Which::Compressed) s.branch = Branch::Compressed, s.cmp_block = kL, s.cmp_stride = kD;
  if (w == Which::Selected) s.branch = Branch::Selected, s.sel_block = kLp, s.block_idx = p.block_idx;
  return s;
}

// Which implementation runs the compressed branch: our kernels, or cuDNN's
// forward (compressed_cudnn.h) followed by our backward kernels from its
// logsumexp or by cuDNN's backward (deterministic, or with atomics:
// CudnnBackward's order, after `ours`). BM_CompressedImpl* set it for their
// rows; unset, the branch rows run ours and the layer rows run what the layer
// runs by default (layer_compressed_impl).
enum class CompressedImpl { ours, cudnn_then_ours, cudnn_deterministic, cudnn_atomic };
std::optional<CompressedImpl> g_compressed_impl;
// The backward after cuDNN's forward (impl other than ours): CudnnBackward in
// the same order, one place behind.
CudnnBackward cudnn_backward_of(CompressedImpl impl) { return CudnnBackward(int(impl) - 1); }
CompressedImpl cudnn_then(CudnnBackward backward) { return CompressedImpl(int(backward) + 1); }

// The layer's default (NSA_COMPRESSED_CUDNN=auto, NSA_COMPRESSED_BWD=auto
// without deterministic algorithms): cuDNN with its atomic backward where the
// call pays and cuDNN takes it, with v2; ours otherwise.
CompressedImpl layer_compressed_impl(const Problem& p) {
  if (g_compressed_impl) return *g_compressed_impl;
  const bool cudnn = !force_v1_kernels() && cudnn_compressed_pays(p.q, p.kc, p.vc) &&
                     cudnn_compressed_declines(p.q, p.kc, p.vc, kL, kD, CudnnBackward::cudnn_atomic).empty();
  return cudnn ? CompressedImpl::cudnn_atomic : CompressedImpl::ours;
}

// The window's backward in the layer rows (after cuDNN's forward): ours unless
// a row sets it (BM_LayerFwdBwdChoices), CudnnBackward's order.
CudnnBackward g_window_backward = CudnnBackward::ours;

// The compressed forward and backward by `impl`.
ForwardResult compressed_forward(const Problem& p, const BranchSpec& spec, CompressedImpl impl) {
  if (impl == CompressedImpl::ours) return attention_forward(p.q, p.kc, p.vc, spec);
  return cudnn_compressed_forward(p.q, p.kc, p.vc, kL, kD, p.scale);
}
void compressed_backward(const Problem& p, const BranchSpec& spec, const ForwardResult& f, CompressedImpl impl) {
  if (impl == CompressedImpl::ours || cudnn_backward_of(impl) == CudnnBackward::ours)
    attention_backward(p.q, p.kc, p.vc, f.o, f.lse, p.dout, spec);
  else
    cudnn_compressed_backward(p.q, p.kc, p.vc, f.o, f.lse, p.dout, kL, kD, p.scale, cudnn_backward_of(impl));
}

// Branch W's forward (or backward, from one forward) on p, timed; and the
// useful FLOPs it stands for.
template <Which W, bool BWD>
double time_branch(benchmark::State& state, const Problem& p) {
  const BranchSpec spec = spec_for(p, W);
  if (W == Which::Compressed) {
    const CompressedImpl impl = g_compressed_impl.value_or(CompressedImpl::ours);
    if (!BWD) return time_it(state, [&] { compressed_forward(p, spec, impl); });
    const ForwardResult f = compressed_forward(p, spec, impl);
    return time_it(state, [&] { compressed_backward(p, spec, f, impl); });
  }
  if (!BWD) return time_it(state, [&] { attention_forward(p.q, p.k, p.v, spec); });
  const ForwardResult f = attention_forward(p.q, p.k, p.v, spec);
  return time_it(state, [&] { attention_backward(p.q, p.k, p.v, f.o, f.lse, p.dout, spec); });
}
template <Which W, bool BWD>
double branch_flops(const Problem& p) {
  const double n = rows_keys(p, W), dk = double(p.sh.dk), dv = double(p.sh.dv);
  return BWD ? 2 * n * (3 * dk + 2 * dv) : 2 * n * (dk + dv);
}

template <Which W, bool BWD>
void BM_Branch(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  KernelVersion version(state, int(W) + (BWD ? 3 : 0));
  const double ms = time_branch<W, BWD>(state, p);
  version.report(ms);
  report(state, ms, branch_flops<W, BWD>(p), dense_ms(p, BWD));
}

// A row of the benchmarks that time one choice against another (a
// ScopedChoice set first): one branch, with TFLOP/s and the speedup over SDPA.
template <Which W, bool BWD>
void branch_row(benchmark::State& state) {
  const Problem p = make_problem(state);
  const double ms = time_branch<W, BWD>(state, p);
  report(state, ms, branch_flops<W, BWD>(p), dense_ms(p, BWD));
}

// dq, dk, dv of one retained forward of `fn` through autograd, as the layer
// runs a library's window (its backward, or ours from its logsumexp).
template <typename Fn>
double time_window_autograd_backward(benchmark::State& state, const Problem& p, Fn&& fn) {
  const at::Tensor q = p.q.detach().requires_grad_(true), k = p.k.detach().requires_grad_(true),
                   v = p.v.detach().requires_grad_(true);
  const at::Tensor o = fn(q, k, v, kW, p.scale);
  return time_it(state, [&] { torch::autograd::grad({o}, {q, k, v}, {p.dout}, /*retain_graph=*/true); });
}

// The window branch as the layer may run it (impl 1: libtorch's
// FlashAttention-2 sliding window, window_flash.h; impl 2: cuDNN's fused
// attention with a band, window_cudnn.h) against our v2 kernel (impl 0), same
// inputs, same run. Backward = dq, dk, dv of one retained forward: ours on the
// launcher (attention_backward), the libraries' through autograd as in the
// layer — not the same measurement (docs/performance.md).
template <bool BWD>
void BM_WindowImpl(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  double ms;
  if (state.range(2) == 0) {
    ms = time_branch<Which::Window, BWD>(state, p);
  } else {
    const bool flash = state.range(2) == 1;
    const std::string why =
        flash ? flash_window_declines(p.q, p.k, p.v, kW) : cudnn_window_declines(p.q, p.k, p.v, kW);
    if (!why.empty()) {
      state.SkipWithError(((flash ? "FlashAttention-2 declines: " : "cuDNN declines: ") + why).c_str());
      return;
    }
    using WindowFn = at::Tensor (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, double);
    // cuDNN's forward with our backward after it, as the layer runs it by default.
    const WindowFn cudnn = [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t w, double s) {
      return cudnn_window_attention(q, k, v, w, s, CudnnBackward::ours);
    };
    const WindowFn fn = flash ? &flash_window_attention : cudnn;
    ms = BWD ? time_window_autograd_backward(state, p, fn)
             : time_it(state, [&] { fn(p.q, p.k, p.v, kW, p.scale); });
  }
  report(state, ms, branch_flops<Which::Window, BWD>(p), dense_ms(p, BWD));
}
// The backward after cuDNN's window forward (window_cudnn.h): arg bwd 0 = our
// kernels from cuDNN's logsumexp (the layer's default), 1 = cuDNN's
// deterministic backward, 2 = cuDNN's backward with atomics (CudnnBackward's
// order; NSA_WINDOW_BWD's ours, cudnn, cudnn_atomic), named with each call.
void BM_CudnnWindowBwd(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  const auto backward = CudnnBackward(state.range(2));
  if (const std::string why = cudnn_window_declines(p.q, p.k, p.v, kW, backward); !why.empty()) {
    state.SkipWithError(("cuDNN declines: " + why).c_str());
    return;
  }
  const double ms = time_window_autograd_backward(
      state, p, [backward](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t w, double scale) {
        return cudnn_window_attention(q, k, v, w, scale, backward);
      });
  report(state, ms, branch_flops<Which::Window, true>(p), dense_ms(p, true));
}
// Each (shape, S) pair with each of `choices` as the third arg, named `arg`:
// the rows of the benchmarks that set one choice and time it, same inputs.
using ShapeSizes = std::initializer_list<std::pair<int, int64_t>>;
void SizesTimesChoices(benchmark::internal::Benchmark* b, ShapeSizes sizes, const std::vector<int64_t>& choices,
                       const char* arg) {
  for (const auto& [shape, S] : sizes)
    for (int64_t choice : choices) b->Args({shape, S, choice});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", arg});
}
// The m7c training shape, m7c at 8k and 64k, each with the benchmark's choices
// 0 .. n_choices - 1 as the third arg.
void M7cChoices(benchmark::internal::Benchmark* b, const char* arg, int n_choices) {
  std::vector<int64_t> choices;
  for (int64_t i = 0; i < n_choices; ++i) choices.push_back(i);
  SizesTimesChoices(b, {{2, 2048}, {1, 8192}, {1, 65536}}, choices, arg);
}
void SizesCudnnWindowBwd(benchmark::internal::Benchmark* b) { M7cChoices(b, "bwd", 3); }

// The compressed branch (BWD: its backward from one forward) or the layer's
// forward + backward with the compressed branch run by impl (CompressedImpl:
// 0 ours, 1 cuDNN's forward then our backward, 2 / 3 cuDNN's backward,
// deterministic / with atomics), same inputs, same run. A shape cuDNN declines
// is skipped with its reason.
bool compressed_impl_applies(benchmark::State& state, const Problem& p, CompressedImpl impl) {
  if (impl == CompressedImpl::ours) return true;
  const std::string why = cudnn_compressed_declines(p.q, p.kc, p.vc, kL, kD, cudnn_backward_of(impl));
  if (!why.empty()) state.SkipWithError(("cuDNN declines: " + why).c_str());
  return why.empty();
}
template <bool BWD>
void BM_CompressedImpl(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<std::optional<CompressedImpl>> impl(g_compressed_impl, CompressedImpl(state.range(2)));
  const Problem p = make_problem(state);
  if (!compressed_impl_applies(state, p, *g_compressed_impl)) return;
  const double ms = time_branch<Which::Compressed, BWD>(state, p);
  report(state, ms, branch_flops<Which::Compressed, BWD>(p), dense_ms(p, BWD));
}
double time_layer(benchmark::State& state, const Problem& p, bool bwd, double* flops);  // below
template <bool BWD>
void BM_LayerCompressedImpl(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<std::optional<CompressedImpl>> impl(g_compressed_impl, CompressedImpl(state.range(2)));
  const Problem p = make_problem(state);
  if (!compressed_impl_applies(state, p, *g_compressed_impl)) return;
  double flops;
  const double ms = time_layer(state, p, BWD, &flops);
  report(state, ms, flops, dense_ms(p, false) + (BWD ? dense_ms(p, true) : 0.0));
}
// The m7c rows (M7cChoices), then paper_kernel at 8k, 32k and 64k; forward rows
// take impl 0 and 1 (2 and 3 differ only in the backward).
void SizesCompressedImpl(benchmark::internal::Benchmark* b, int n_impl) {
  M7cChoices(b, "impl", n_impl);
  for (int64_t S : {8192, 32768, 65536})
    for (int64_t impl = 0; impl < n_impl; ++impl) b->Args({0, S, impl});
}
void SizesWindowImpl(benchmark::internal::Benchmark* b) { M7cChoices(b, "impl", 3); }
// BM_ReverseIndex: impl 0 = the kernels, 1 = the sort.
void SizesReverseIndex(benchmark::internal::Benchmark* b) { M7cChoices(b, "impl", 2); }

// FROM_LSE: given the compressed forward's logsumexp, as the layer calls it
// (v2 then reads the compressed keys once instead of twice).
template <bool FROM_LSE>
void BM_SelectBlocks(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  const at::Tensor lse =
      FROM_LSE ? attention_forward(p.q, p.kc, p.vc, spec_for(p, Which::Compressed)).lse : at::Tensor();
  KernelVersion version(state, FROM_LSE ? 21 : 20);
  const double ms = time_it(state, [&] { select_blocks(p.q, p.kc, kL, kD, kLp, kN, p.scale, lse); });
  version.report(ms);
  report(state, ms, 2 * keys_compressed(p.S) * p.sh.B * p.sh.H * p.sh.dk, 0);
}

// The selected backward's reverse index (reverse_index.h) from select_blocks'
// choices: impl 0 = the counting-sort kernels, 1 = ATen's stable sort. Counter
// GB/s: block_idx read twice and the index written once, by the kernels' count.
void BM_ReverseIndex(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  const bool by_sort = state.range(2) == 1;
  const int64_t n_blocks = (p.S + kLp - 1) / kLp;
  const double ms = time_it(state, [&] {
    by_sort ? reverse_index_by_sort(p.block_idx, kLp, n_blocks) : reverse_index_by_kernels(p.block_idx, kLp, n_blocks);
  });
  state.counters["ms"] = ms;
  state.counters["GB/s"] = ms > 0 ? 3.0 * double(p.block_idx.numel()) * 4 / (ms * 1e-3) / 1e9 : 0;
}

// The whole layer's attention: select_blocks + compressed + selected + window,
// forward (and backward), timed; *flops gets the useful work it stands for.
double time_layer(benchmark::State& state, const Problem& p, bool bwd, double* flops) {
  const double dk = double(p.sh.dk), dv = double(p.sh.dv);
  double n = 0;
  for (Which w : {Which::Window, Which::Compressed, Which::Selected}) n += rows_keys(p, w);
  *flops = 2 * n * (dk + dv) + 2 * keys_compressed(p.S) * p.sh.B * p.sh.H * dk;
  // The window's forward as the layer runs it by default (NSA_WINDOW_CUDNN=1):
  // cuDNN's where it has an engine, with v2; its backward ours, or cuDNN's where
  // a row asks (g_window_backward) and cuDNN takes it.
  const bool cudnn_window = !force_v1_kernels() && cudnn_window_declines(p.q, p.k, p.v, kW).empty();
  const bool cudnn_window_bwd = cudnn_window && g_window_backward != CudnnBackward::ours &&
                                cudnn_window_declines(p.q, p.k, p.v, kW, g_window_backward).empty();
  state.counters["cudnn_window"] = cudnn_window;
  state.counters["window_bwd"] = int(cudnn_window_bwd ? g_window_backward : CudnnBackward::ours);
  // The compressed branch likewise (layer_compressed_impl): the counter names it.
  const CompressedImpl cmp = layer_compressed_impl(p);
  state.counters["compressed_impl"] = int(cmp);
  // In the layer's order (select_blocks reads the compressed forward's
  // logsumexp) and on the layer's streams (layer_routing.cpp): with the overlap
  // on (NSA_OVERLAP_STREAMS=1, the default; stream_overlap()) the window runs on
  // its lane beside the compressed -> select_blocks -> selected chain and the
  // compressed branch on its own lane, its forward joined at once; each
  // backward runs on the stream its forward ran on, as autograd runs the
  // layer's, in autograd's order (the window's first: its forward came last).
  // With it off, everything runs on the caller's stream, one after the other.
  // A lane forks where the branch's inputs are ready (the window's and, in
  // the backward, both lanes' before any branch is launched): a fork waits for
  // everything queued on the caller's stream before it.
  const bool lanes = stream_overlap();
  const c10::DeviceIndex device = p.q.get_device();
  const auto fork = [&](std::optional<ForkedStream>& win_lane, std::optional<ForkedStream>& cmp_lane) {
    if (!lanes) return;
    win_lane.emplace(device, Lane::window);
    cmp_lane.emplace(device, Lane::compressed);
  };
  // fn on the lane's stream, or on the caller's without the overlap.
  const auto run_on = [](const std::optional<ForkedStream>& lane, const std::function<void()>& fn) {
    std::optional<c10::cuda::CUDAStreamGuard> on_side;
    if (lane) on_side.emplace(lane->side());
    fn();
  };
  const auto join = [](std::optional<ForkedStream>& lane, ForkedStream::Tensors made) {
    if (lane) lane->join(made);
  };
  const auto fwd_all = [&] {
    std::vector<ForwardResult> f(3);
    std::optional<ForkedStream> win_lane, cmp_lane;
    fork(win_lane, cmp_lane);
    run_on(cmp_lane, [&] { f[0] = compressed_forward(p, spec_for(p, Which::Compressed), cmp); });
    join(cmp_lane, {f[0].o, f[0].lse});
    BranchSpec s = spec_for(p, Which::Selected);
    s.block_idx = select_blocks(p.q, p.kc, kL, kD, kLp, kN, p.scale, f[0].lse);
    f[1] = attention_forward(p.q, p.k, p.v, s);
    run_on(win_lane, [&] {
      f[2] = cudnn_window ? cudnn_window_forward(p.q, p.k, p.v, kW, p.scale)
                          : attention_forward(p.q, p.k, p.v, spec_for(p, Which::Window));
    });
    join(win_lane, {f[2].o, f[2].lse});
    return f;
  };
  if (!bwd) return time_it(state, [&] { fwd_all(); });
  *flops += 2 * n * (3 * dk + 2 * dv);
  return time_it(state, [&] {
    const auto f = fwd_all();
    std::optional<ForkedStream> win_lane, cmp_lane;
    fork(win_lane, cmp_lane);
    run_on(win_lane, [&] {
      if (cudnn_window_bwd)
        cudnn_window_backward(p.q, p.k, p.v, f[2].o, f[2].lse, p.dout, kW, p.scale, g_window_backward);
      else
        attention_backward(p.q, p.k, p.v, f[2].o, f[2].lse, p.dout, spec_for(p, Which::Window));
    });
    attention_backward(p.q, p.k, p.v, f[1].o, f[1].lse, p.dout, spec_for(p, Which::Selected));
    run_on(cmp_lane, [&] { compressed_backward(p, spec_for(p, Which::Compressed), f[0], cmp); });
    join(win_lane, {});
    join(cmp_lane, {});
  });
}

// The layer's forward (BWD: + backward) as a row, against SDPA's same.
template <bool BWD>
void layer_row(benchmark::State& state) {
  const Problem p = make_problem(state);
  double flops;
  const double ms = time_layer(state, p, BWD, &flops);
  report(state, ms, flops, dense_ms(p, false) + (BWD ? dense_ms(p, true) : 0.0));
}

template <bool BWD>
void BM_LayerAttention(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  KernelVersion version(state, 10 + int(BWD));
  double flops;
  const double ms = time_layer(state, p, BWD, &flops);
  version.report(ms);
  const double dense = dense_ms(p, false) + (BWD ? dense_ms(p, true) : 0.0);
  report(state, ms, flops, dense);
}

// What ran against what the row asked for (counter `name`, the value that
// ran): a row that asked for one kernel and timed another is skipped, both
// named, instead of being reported under the asked one's label.
void check_ran(benchmark::State& state, const char* name, int asked, int ran) {
  state.counters[name] = ran;
  if (ran != asked)
    state.SkipWithError(
        (std::string("asked ") + name + " " + std::to_string(asked) + ", ran " + std::to_string(ran)).c_str());
}

// How each branch's backward makes dq (nsa_cuda.h, BackwardDq): arg dq 0 = its
// own kernel, 1 = added by the dk/dv kernel in fp32 atomics, 2 = written by
// the dk/dv kernel to the blocks' slots and merged (the selected branch only);
// one branch's backward (counter dq: what ran; a row that ran another way
// than asked is skipped), or the layer's forward + backward with the selected
// branch's dq so (the window's and compressed's as the layer runs them: their
// kernels).
template <Which W>
void BM_BwdDq(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(W)], BackwardDq(state.range(2)));
  const Problem p = make_problem(state);
  const double ms = time_branch<W, true>(state, p);
  report(state, ms, branch_flops<W, true>(p), dense_ms(p, true));
  check_ran(state, "dq", int(state.range(2)), int(last_backward_dq()));
}
void BM_LayerFwdBwdDq(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(Which::Selected)], BackwardDq(state.range(2)));
  layer_row<true>(state);
}
// The m7c rows (M7cChoices), then paper_kernel at 8k and 64k.
template <int kChoices>
void SizesBackwardDq(benchmark::internal::Benchmark* b) {
  M7cChoices(b, "dq", kChoices);
  for (int64_t S : {8192, 65536})
    for (int64_t dq = 0; dq < kChoices; ++dq) b->Args({0, S, dq});
}

// A device to run on, and wgmma where the row asks for it (`wgmma`); else the
// row is skipped with why.
bool wgmma_row(benchmark::State& state, bool wgmma) {
  if (!require_device(state)) return false;
  if (const std::string why = wgmma_declines(); wgmma && !why.empty()) {
    state.SkipWithError(("wgmma declines: " + why).c_str());
    return false;
  }
  return true;
}
// The selected dk/dv kernel with dq on mma.sync (arg mma 1) or on Hopper's
// warpgroup MMAs (mma 2; nsa_cuda.h, set_selected_dkdv_mma; counter wgmma:
// what ran): the selected backward, or the layer's forward + backward (its
// other branches' backward as BM_LayerAttentionFwdBwd runs them), both with
// the selected dq added in atomics, as only that kernel has the two MMAs;
// same inputs, same run. A row whose device or build declines wgmma is
// skipped with why; so is a row after which the last selected dk/dv kernel
// did not run on the MMAs it asked for: such a row would time the other one
// (before this check the layer's rows ran the selected dq kernel instead,
// its counter wgmma 0 in both: they compared nothing).
bool selected_mma_row(benchmark::State& state) {
  return wgmma_row(state, SelectedMma(state.range(2)) == SelectedMma::Wgmma);
}
void report_selected_mma(benchmark::State& state) {
  check_ran(state, "wgmma", SelectedMma(state.range(2)) == SelectedMma::Wgmma, last_selected_dkdv_wgmma());
}
// The selected backward with dq in atomics on the MMAs arg mma asks.
void selected_bwd_mma_row(benchmark::State& state) {
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(Which::Selected)], BackwardDq::atomic);
  const ScopedChoice<SelectedMma> mma(selected_dkdv_mma(), set_selected_dkdv_mma, SelectedMma(state.range(2)));
  const Problem p = make_problem(state);
  const double ms = time_branch<Which::Selected, true>(state, p);
  report(state, ms, branch_flops<Which::Selected, true>(p), dense_ms(p, true));
  report_selected_mma(state);
}
void BM_SelectedBwdMma(benchmark::State& state) {
  if (selected_mma_row(state)) selected_bwd_mma_row(state);
}
void BM_LayerFwdBwdMma(benchmark::State& state) {
  if (!selected_mma_row(state)) return;
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(Which::Selected)], BackwardDq::atomic);
  const ScopedChoice<SelectedMma> mma(selected_dkdv_mma(), set_selected_dkdv_mma, SelectedMma(state.range(2)));
  layer_row<true>(state);
  report_selected_mma(state);
}
// The compressed backward three ways (arg mma: 0 = dk/dv then the dq kernel,
// the default; 1 = dq added in atomics by the mma.sync dk/dv kernel; 2 = the
// same on warpgroup MMAs; counter wgmma: what ran), alone and as the layer's
// forward + backward (BM_LayerFwdBwdCmpMma: its other choices the fast ones of
// BM_LayerFwdBwdChoices); same inputs, same run.
BackwardDq compressed_mma_dq(int64_t arg) { return arg == 0 ? BackwardDq::kernel : BackwardDq::atomic; }
ScopedChoice<SelectedMma> compressed_mma_choice(int64_t arg) {
  return {compressed_dkdv_mma(), set_compressed_dkdv_mma, arg == 2 ? SelectedMma::Wgmma : SelectedMma::MmaSync};
}
void BM_CompressedBwdMma(benchmark::State& state) {
  if (!wgmma_row(state, state.range(2) == 2)) return;
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(Which::Compressed)], compressed_mma_dq(state.range(2)));
  const ScopedChoice<SelectedMma> mma = compressed_mma_choice(state.range(2));
  const Problem p = make_problem(state);
  const double ms = time_branch<Which::Compressed, true>(state, p);
  report(state, ms, branch_flops<Which::Compressed, true>(p), dense_ms(p, true));
  check_ran(state, "wgmma", state.range(2) == 2, last_compressed_dkdv_wgmma());
}
void SizesCompressedMma(benchmark::internal::Benchmark* b) {
  SizesTimesChoices(b, {{2, 2048}, {1, 8192}, {1, 65536}}, {0, 1, 2}, "mma");
}
// The (shape, S) pairs the selected backward's split and share sweeps run:
// m7c and paper_kernel at 8k and 64k.
const std::vector<std::pair<int64_t, int64_t>> kSelectedBwdSweepShapes{{1, 8192}, {1, 65536}, {0, 8192}, {0, 65536}};
// The selected backward of BM_SelectedBwdMma with a forced number of row
// splits (arg splits, 0 = the automatic choice; set_dkdv_row_splits; counter
// splits: what ran): which split suits each kernel.
void BM_SelectedBwdMmaSplits(benchmark::State& state) {
  if (!selected_mma_row(state)) return;
  const ScopedChoice<int> splits(dkdv_row_splits_forced(), set_dkdv_row_splits, int(state.range(3)));
  selected_bwd_mma_row(state);
  state.counters["splits"] = last_selected_dkdv_row_splits();
}
// BM_SelectedBwdMmaSplits with the work list's items per resident CTA slot
// forced (arg waves, 0 = the automatic 4; set_dkdv_item_waves): the share each
// item takes. Each shape on the MMAs it takes by default (m7c wgmma,
// paper_kernel mma.sync).
void BM_SelectedBwdItemWaves(benchmark::State& state) {
  if (!selected_mma_row(state)) return;
  const ScopedChoice<int> waves(dkdv_item_waves_forced(), set_dkdv_item_waves, int(state.range(3)));
  selected_bwd_mma_row(state);
  state.counters["splits"] = last_selected_dkdv_row_splits();
}
void SizesSelectedItemWaves(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "S", "mma", "waves"});
  for (const auto& [shape, S] : kSelectedBwdSweepShapes)
    for (const int64_t waves : {0, 1, 2, 3, 6, 8, 16})  // the MMAs each shape takes by default
      b->Args({shape, S, int64_t(shape == 1 ? SelectedMma::Wgmma : SelectedMma::MmaSync), waves});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
void SizesSelectedMmaSplits(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "S", "mma", "splits"});
  for (const auto& [shape, S] : kSelectedBwdSweepShapes)
    for (const SelectedMma mma : {SelectedMma::MmaSync, SelectedMma::Wgmma})
      for (const int64_t splits : {0, 1, 2, 4, 8, 16, 32}) b->Args({shape, S, int64_t(mma), splits});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
void SizesSelectedMma(benchmark::internal::Benchmark* b) {
  SizesTimesChoices(b, {{2, 2048}, {1, 8192}, {1, 65536}, {0, 8192}, {0, 32768}, {0, 65536}},
                    {int64_t(SelectedMma::MmaSync), int64_t(SelectedMma::Wgmma)}, "mma");
}

// The layer's forward + backward with the three backward choices a run makes
// of `auto` (nsa/determinism.h, kBackwardChoices): arg fast 0 = the
// reproducible ones (train.deterministic), 1 = the fast ones (a run without
// deterministic algorithms, the layer's default, as SDPA's own backward is).
// BM_LayerAttentionFwdBwd keeps its mixed set (the compressed backward's fast
// choice, the others' reproducible ones) so that its figures compare across
// sections. Counters name what ran: window_bwd (CudnnBackward), compressed_impl
// (CompressedImpl), selected_dq and compressed_dq (BackwardDq). A row that
// sets the compressed dq itself (BM_LayerFwdBwdCmpMma) passes it.
void layer_choices_row(benchmark::State& state, bool fast, std::optional<BackwardDq> compressed_dq = std::nullopt) {
  const auto value = [fast](std::string_view flag) {
    const BackwardChoice& c = backward_choice_row(flag);
    return fast ? c.fast : c.reproducible;
  };
  const Problem p = make_problem(state);
  const CudnnBackward window = parse_cudnn_backward("NSA_WINDOW_BWD", value("NSA_WINDOW_BWD"));
  const CudnnBackward compressed = parse_cudnn_backward("NSA_COMPRESSED_BWD", value("NSA_COMPRESSED_BWD"));
  const BackwardDq dq = parse_backward_dq(value("NSA_SELECTED_DQ"));
  const BackwardDq cmp_dq = compressed_dq.value_or(parse_backward_dq(value("NSA_COMPRESSED_DQ")));
  // The compressed branch: cuDNN where the layer takes it (its forward pays and
  // cuDNN has the backward asked), with that backward; ours otherwise.
  const bool cmp_cudnn = !force_v1_kernels() && cudnn_compressed_pays(p.q, p.kc, p.vc) &&
                         cudnn_compressed_declines(p.q, p.kc, p.vc, kL, kD, compressed).empty();
  const ScopedChoice<std::optional<CompressedImpl>> impl(
      g_compressed_impl, cmp_cudnn ? cudnn_then(compressed) : CompressedImpl::ours);
  const ScopedChoice<CudnnBackward> win(g_window_backward, window);
  const ScopedChoice<BackwardDq> sel(g_backward_dq[int(Which::Selected)], dq);
  const ScopedChoice<BackwardDq> cmp(g_backward_dq[int(Which::Compressed)], cmp_dq);
  state.counters["selected_dq"] = int(dq);
  state.counters["compressed_dq"] = int(cmp_dq);
  layer_row<true>(state);
}
void BM_LayerFwdBwdChoices(benchmark::State& state) {
  if (require_device(state)) layer_choices_row(state, state.range(2) != 0);
}
void BM_LayerFwdBwdCmpMma(benchmark::State& state) {
  if (!wgmma_row(state, state.range(2) == 2)) return;
  const ScopedChoice<SelectedMma> mma = compressed_mma_choice(state.range(2));
  layer_choices_row(state, true, compressed_mma_dq(state.range(2)));
}
void SizesLayerChoices(benchmark::internal::Benchmark* b) {
  for (int shape : {0, 1})
    for (int64_t S : {8192, 32768, 65536})
      for (int64_t fast : {0, 1}) b->Args({shape, S, fast});
  b->Args({2, 2048, 0})->Args({2, 2048, 1});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", "fast"});
}

template <bool BWD>
void BM_DenseSdpa(benchmark::State& state) {
  if (!require_device(state)) return;
  const Problem p = make_problem(state);
  const double n = double(p.S) * double(p.S + 1) / 2 * p.sh.B * p.sh.H, dk = p.sh.dk, dv = p.sh.dv;
  const Dense d(p, BWD);
  const double ms = time_it(state, [&] {
    if (BWD) d.backward(); else d.forward();
  });
  dense_cache()[dense_key(p, BWD)] = ms;
  report(state, ms, BWD ? 2 * n * (3 * dk + 2 * dv) : 2 * n * (dk + dv), 0);
}

// KV tokens one decode step (query t = S-1) reads in the three branches, from
// the kernels' key ranges (a tile loads only keys < hi, so ranges are exact):
// paper Table 4 gives 2048 / 2560 / 3584 / 5632 at 8k / 16k / 32k / 64k.
void BM_DecodeKvTokens(benchmark::State& state) {
  const int S = int(state.range(1)), t = S - 1;
  int lo, hi;
  contiguous_key_range(Branch::Compressed, t, t, 1 << 30, kW, kL, kD, &lo, &hi);
  double tokens = hi - lo;
  contiguous_key_range(Branch::Window, t, t, S, int(kW), kL, kD, &lo, &hi);
  tokens += hi - lo;
  const int local = t / int(kLp);
  std::vector<int> blocks = {0, local, local - 1};  // forced, then the n-3 others (any full blocks)
  for (int j = 1; int(blocks.size()) < kN && j < local - 1; ++j) blocks.push_back(j);
  for (int j : blocks) {
    selected_key_range(j, t, S, int(kLp), &lo, &hi);
    tokens += hi - lo;
  }
  for (auto _ : state) benchmark::DoNotOptimize(tokens);
  state.counters["kv_tokens"] = tokens;
  state.counters["paper_table4"] = double(S) / kD + kN * kLp + kW;
  state.counters["dense_tokens"] = S;
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int shape : {0, 1})
    for (int64_t S : {2048, 8192, 16384, 32768, 65536}) b->Args({shape, S});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S"});
}
// Sizes x kernel version (v1 first, so v2 can report speedup_vs_v1).
void SizesV(benchmark::internal::Benchmark* b) {
  for (int shape : {0, 1})
    for (int64_t S : {2048, 8192, 16384, 32768, 65536})
      for (int64_t v : {1, 2}) b->Args({shape, S, v});
  for (int64_t v : {1, 2}) b->Args({2, 2048, v});  // m7c as its training step runs it (batch 8)
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", "v"});
}

// Selected v2 under each tiling (nsa_cuda.h, SelectedTiling): arg tiling 1 =
// SharedRows, 2 = SplitKeys, 3 = QueryColumns, 4 = KeyOuter (each the forward,
// or dq in the backward rows); where one does not apply, the automatic choice;
// the BM_Selected rows run the automatic choice.
template <bool BWD>
void BM_SelectedTiling(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<SelectedTiling> tiling(selected_tiling(), set_selected_tiling, SelectedTiling(state.range(2)));
  branch_row<Which::Selected, BWD>(state);
}
void SizesTiling(benchmark::internal::Benchmark* b) {
  for (int shape : {0, 1})
    for (int64_t S : {2048, 8192, 16384, 32768, 65536})
      for (int64_t tiling = 1; tiling <= 4; ++tiling) b->Args({shape, S, tiling});
  for (int64_t tiling = 1; tiling <= 4; ++tiling)
    b->Args({2, 2048, tiling});  // m7c as its training step runs it (batch 8)
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", "tiling"});
}

// The v2 forward of each branch with its products on mma.sync (arg wg 0) and on
// Hopper's warpgroup MMAs (wg 1; nsa_cuda.h, set_forward_wgmma), same inputs,
// same run: the m7c training shape, m7c at 8k and 64k (dk = dv = 64, where v3
// applies). A row whose device or build declines wgmma is skipped with why.
template <Which W>
void BM_ForwardMma(benchmark::State& state) {
  if (!wgmma_row(state, state.range(2) == 1)) return;
  const ScopedChoice<bool> wgmma(forward_wgmma(), set_forward_wgmma, state.range(2) == 1);
  branch_row<W, false>(state);
}
void SizesForwardMma(benchmark::internal::Benchmark* b) { M7cChoices(b, "wg", 2); }

// v2 dk/dv with a forced number of row splits (nsa_cuda.h, set_dkdv_row_splits;
// 0 = the automatic choice): backward of the selected and compressed branches.
template <Which W>
void BM_DkdvSplits(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<int> splits(dkdv_row_splits_forced(), set_dkdv_row_splits, int(state.range(2)));
  branch_row<W, true>(state);
}
void SizesSplits(benchmark::internal::Benchmark* b) {
  SizesTimesChoices(b, {{0, 8192}, {0, 65536}, {1, 2048}, {1, 8192}, {1, 65536}, {2, 2048}, {2, 8192}, {3, 2048}},
                    {0, 1, 2, 4, 8, 16, 32, 64}, "splits");
}

// Each branch and the layer with the CTAs started heaviest tile first (arg
// order 0, the default) or in blockIdx order (1; nsa_cuda.h, set_cta_order),
// same inputs, same run: the m7c training shape at batch 4 and 8, m7c at 8k and
// 64k, paper_kernel at 8k and 64k.
template <Which W, bool BWD>
void BM_CtaOrder(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<CtaOrder> order(cta_order(), set_cta_order, CtaOrder(state.range(2)));
  branch_row<W, BWD>(state);
}
// select_blocks from the compressed forward's logsumexp, as the layer runs it,
// under whatever choice the caller holds; reports its time and TFLOP/s.
void select_from_lse_row(benchmark::State& state) {
  const Problem p = make_problem(state);
  const at::Tensor lse = attention_forward(p.q, p.kc, p.vc, spec_for(p, Which::Compressed)).lse;
  const double ms = time_it(state, [&] { select_blocks(p.q, p.kc, kL, kD, kLp, kN, p.scale, lse); });
  report(state, ms, 2 * keys_compressed(p.S) * p.sh.B * p.sh.H * p.sh.dk, 0);
}
void BM_SelectBlocksCtaOrder(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<CtaOrder> order(cta_order(), set_cta_order, CtaOrder(state.range(2)));
  select_from_lse_row(state);
}
// select_blocks with CTAs of arg warps = 4 or 8 (nsa_cuda.h,
// set_select_blocks_warps); counter warps = what ran (8 exists with half sums
// at dk >= 128 only).
void BM_SelectBlocksWarps(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<int> warps(select_blocks_warps(), set_select_blocks_warps, int(state.range(2)));
  select_from_lse_row(state);
  state.counters["warps"] = last_select_blocks_warps();
}
// (shape, S) pairs, each with 4 and 8 warps as the third arg.
void SizesWarps(benchmark::internal::Benchmark* b, ShapeSizes sizes) { SizesTimesChoices(b, sizes, {4, 8}, "warps"); }
void SizesSelectWarps(benchmark::internal::Benchmark* b) { SizesWarps(b, {{0, 8192}, {0, 32768}, {0, 65536}}); }
// KeyOuter's forward in CTAs of 4 or 8 warps (nsa_cuda.h,
// set_selected_key_outer_warps; counter warps: what ran), the selected forward
// with KeyOuter forced, same inputs, same run.
void BM_SelectedKoWarps(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<SelectedTiling> tiling(selected_tiling(), set_selected_tiling, SelectedTiling::KeyOuter);
  const ScopedChoice<int> warps(selected_key_outer_warps(), set_selected_key_outer_warps, int(state.range(2)));
  branch_row<Which::Selected, false>(state);
  state.counters["warps"] = last_selected_key_outer_warps();
}
void SizesKoWarps(benchmark::internal::Benchmark* b) { SizesWarps(b, {{0, 8192}, {0, 32768}, {0, 65536}, {1, 65536}}); }
// KeyOuter's forward products on mma.sync (mma 1) or Hopper's warpgroup MMAs
// (mma 2; nsa_cuda.h, set_selected_key_outer_mma; counter wgmma: what ran), in
// CTAs of 4 or 8 warps (counter warps), the selected forward with KeyOuter
// forced, same inputs, same run; a row that ran otherwise is skipped
// (check_ran).
void BM_SelectedKoMma(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<SelectedTiling> tiling(selected_tiling(), set_selected_tiling, SelectedTiling::KeyOuter);
  const ScopedChoice<int> warps(selected_key_outer_warps(), set_selected_key_outer_warps, int(state.range(2)));
  const ScopedChoice<SelectedMma> mma(selected_key_outer_mma(), set_selected_key_outer_mma,
                                      SelectedMma(state.range(3)));
  branch_row<Which::Selected, false>(state);
  check_ran(state, "warps", int(state.range(2)), last_selected_key_outer_warps());
  check_ran(state, "wgmma", SelectedMma(state.range(3)) == SelectedMma::Wgmma, last_selected_key_outer_wgmma());
}
void SizesKoMma(benchmark::internal::Benchmark* b) {
  for (const auto& [shape, S] : {std::pair<int, int64_t>{0, 8192}, {0, 32768}, {0, 65536}, {1, 8192}, {1, 65536}})
    for (int64_t warps : {4, 8})
      for (SelectedMma mma : {SelectedMma::MmaSync, SelectedMma::Wgmma}) b->Args({shape, S, warps, int64_t(mma)});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", "warps", "mma"});
}
// The selected KeyOuter forward (bwd 0) or backward with the KeyOuter dq
// kernel (bwd 1, BackwardDq::kernel) in chunks of a forced number of queries
// (arg chunk, 0 = the automatic choice, partials within 1 GiB;
// set_selected_key_outer_chunk): fewer, longer chunks against partials that
// fit in less memory; the shortest, whose partials stay in the L2 between the
// ko kernel and the merge, against more launches.
void BM_SelectedKoChunk(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<SelectedTiling> tiling(selected_tiling(), set_selected_tiling, SelectedTiling::KeyOuter);
  const ScopedChoice<int64_t> chunk(selected_key_outer_chunk(), set_selected_key_outer_chunk, state.range(3));
  if (state.range(2) == 0) return branch_row<Which::Selected, false>(state);
  const ScopedChoice<BackwardDq> dq(g_backward_dq[int(Which::Selected)], BackwardDq::kernel);
  branch_row<Which::Selected, true>(state);
}
void SizesKoChunk(benchmark::internal::Benchmark* b) {
  for (const auto& [shape, S] : {std::pair<int, int64_t>{0, 8192}, {0, 65536}, {1, 65536}})
    for (int64_t bwd : {0, 1})
      for (int64_t chunk : {0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) b->Args({shape, S, bwd, chunk});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->ArgNames({"shape", "S", "bwd", "chunk"});
}
void BM_LayerCtaOrder(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<CtaOrder> order(cta_order(), set_cta_order, CtaOrder(state.range(2)));
  layer_row<true>(state);
}
void SizesCtaOrder(benchmark::internal::Benchmark* b) {
  SizesTimesChoices(b, {{3, 2048}, {2, 2048}, {1, 8192}, {1, 65536}, {0, 8192}, {0, 65536}}, {0, 1}, "order");
}

// Backward with dk/dv on a second stream beside dq (arg overlap 1, the
// default; nsa_cuda.h, set_stream_overlap) or one after the other (0): each
// branch's backward, same inputs, same run. The layer's forward + backward
// likewise (and its forward), where the overlap also puts the window and
// compressed branches on lanes of their own (time_layer): what
// NSA_OVERLAP_STREAMS=1 and =0 run.
template <Which W>
void BM_BwdOverlap(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<bool> overlap(stream_overlap(), set_stream_overlap, state.range(2) != 0);
  branch_row<W, true>(state);
}
template <bool BWD>
void BM_LayerOverlap(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<bool> overlap(stream_overlap(), set_stream_overlap, state.range(2) != 0);
  layer_row<BWD>(state);
}
void SizesOverlap(benchmark::internal::Benchmark* b) { M7cChoices(b, "overlap", 2); }
void SizesLayerOverlap(benchmark::internal::Benchmark* b) {
  SizesTimesChoices(b, {{2, 2048}, {1, 8192}, {1, 65536}, {0, 8192}, {0, 65536}}, {0, 1}, "overlap");
}

BENCHMARK(BM_DenseSdpa<false>)->Name("BM_DenseSdpaFwd")->Apply(Sizes);
BENCHMARK(BM_DenseSdpa<true>)->Name("BM_DenseSdpaBwd")->Apply(Sizes);
BENCHMARK(BM_Branch<Which::Window, false>)->Name("BM_WindowFwd")->Apply(SizesV);
BENCHMARK(BM_Branch<Which::Window, true>)->Name("BM_WindowBwd")->Apply(SizesV);
BENCHMARK(BM_WindowImpl<false>)->Name("BM_WindowImplFwd")->Apply(SizesWindowImpl);
BENCHMARK(BM_WindowImpl<true>)->Name("BM_WindowImplBwd")->Apply(SizesWindowImpl);
BENCHMARK(BM_CudnnWindowBwd)->Apply(SizesCudnnWindowBwd);
BENCHMARK(BM_CompressedImpl<false>)->Name("BM_CompressedImplFwd")->Apply([](auto* b) { SizesCompressedImpl(b, 2); });
BENCHMARK(BM_CompressedImpl<true>)->Name("BM_CompressedImplBwd")->Apply([](auto* b) { SizesCompressedImpl(b, 4); });
BENCHMARK(BM_LayerCompressedImpl<false>)->Name("BM_LayerCompressedImplFwd")->Apply([](auto* b) {
  SizesCompressedImpl(b, 2);
});
BENCHMARK(BM_LayerCompressedImpl<true>)->Name("BM_LayerCompressedImplFwdBwd")->Apply([](auto* b) {
  SizesCompressedImpl(b, 4);
});
BENCHMARK(BM_SelectBlocks<false>)->Name("BM_SelectBlocks")->Apply(SizesV);
BENCHMARK(BM_SelectBlocks<true>)->Name("BM_SelectBlocksFromLse")->Apply(SizesV);
BENCHMARK(BM_ReverseIndex)->Apply(SizesReverseIndex);
BENCHMARK(BM_Branch<Which::Selected, false>)->Name("BM_SelectedFwd")->Apply(SizesV);
BENCHMARK(BM_Branch<Which::Selected, true>)->Name("BM_SelectedBwd")->Apply(SizesV);
BENCHMARK(BM_SelectedTiling<false>)->Name("BM_SelectedFwdTiling")->Apply(SizesTiling);
BENCHMARK(BM_ForwardMma<Which::Selected>)->Name("BM_SelectedFwdMma")->Apply(SizesForwardMma);
BENCHMARK(BM_ForwardMma<Which::Window>)->Name("BM_WindowFwdMma")->Apply(SizesForwardMma);
BENCHMARK(BM_ForwardMma<Which::Compressed>)->Name("BM_CompressedFwdMma")->Apply(SizesForwardMma);
BENCHMARK(BM_SelectedTiling<true>)->Name("BM_SelectedBwdTiling")->Apply(SizesTiling);
BENCHMARK(BM_DkdvSplits<Which::Selected>)->Name("BM_SelectedBwdSplits")->Apply(SizesSplits);
BENCHMARK(BM_DkdvSplits<Which::Compressed>)->Name("BM_CompressedBwdSplits")->Apply(SizesSplits);
BENCHMARK(BM_Branch<Which::Compressed, false>)->Name("BM_CompressedFwd")->Apply(SizesV);
BENCHMARK(BM_Branch<Which::Compressed, true>)->Name("BM_CompressedBwd")->Apply(SizesV);
BENCHMARK(BM_LayerAttention<false>)->Name("BM_LayerAttentionFwd")->Apply(SizesV);
BENCHMARK(BM_LayerAttention<true>)->Name("BM_LayerAttentionFwdBwd")->Apply(SizesV);
BENCHMARK(BM_CtaOrder<Which::Selected, false>)->Name("BM_SelectedFwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_CtaOrder<Which::Selected, true>)->Name("BM_SelectedBwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_CtaOrder<Which::Compressed, false>)->Name("BM_CompressedFwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_CtaOrder<Which::Compressed, true>)->Name("BM_CompressedBwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_CtaOrder<Which::Window, true>)->Name("BM_WindowBwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_LayerCtaOrder)->Name("BM_LayerFwdBwdOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_SelectBlocksCtaOrder)->Name("BM_SelectBlocksFromLseOrder")->Apply(SizesCtaOrder);
BENCHMARK(BM_SelectBlocksWarps)->Apply(SizesSelectWarps);
BENCHMARK(BM_SelectedKoWarps)->Apply(SizesKoWarps);
BENCHMARK(BM_SelectedKoMma)->Apply(SizesKoMma);
BENCHMARK(BM_SelectedKoChunk)->Apply(SizesKoChunk);
BENCHMARK(BM_BwdOverlap<Which::Selected>)->Name("BM_SelectedBwdOverlap")->Apply(SizesOverlap);
BENCHMARK(BM_BwdOverlap<Which::Window>)->Name("BM_WindowBwdOverlap")->Apply(SizesOverlap);
BENCHMARK(BM_BwdOverlap<Which::Compressed>)->Name("BM_CompressedBwdOverlap")->Apply(SizesOverlap);
BENCHMARK(BM_LayerOverlap<false>)->Name("BM_LayerFwdOverlap")->Apply(SizesLayerOverlap);
BENCHMARK(BM_LayerOverlap<true>)->Name("BM_LayerFwdBwdOverlap")->Apply(SizesLayerOverlap);
BENCHMARK(BM_BwdDq<Which::Window>)->Name("BM_WindowBwdDq")->Apply(SizesBackwardDq<2>);
BENCHMARK(BM_BwdDq<Which::Compressed>)->Name("BM_CompressedBwdDq")->Apply(SizesBackwardDq<2>);
BENCHMARK(BM_BwdDq<Which::Selected>)->Name("BM_SelectedBwdDq")->Apply(SizesBackwardDq<3>);
BENCHMARK(BM_LayerFwdBwdDq)->Apply(SizesBackwardDq<3>);
BENCHMARK(BM_LayerFwdBwdChoices)->Apply(SizesLayerChoices);
BENCHMARK(BM_SelectedBwdMma)->Apply(SizesSelectedMma);
BENCHMARK(BM_CompressedBwdMma)->Apply(SizesCompressedMma);
BENCHMARK(BM_LayerFwdBwdCmpMma)->Apply(SizesCompressedMma);
BENCHMARK(BM_SelectedBwdMmaSplits)->Apply(SizesSelectedMmaSplits);
BENCHMARK(BM_SelectedBwdItemWaves)->Apply(SizesSelectedItemWaves);
BENCHMARK(BM_LayerFwdBwdMma)->Apply(SizesSelectedMma);
BENCHMARK(BM_DecodeKvTokens)->Args({0, 8192})->Args({0, 16384})->Args({0, 32768})->Args({0, 65536})
    ->ArgNames({"shape", "S"});

// ---- The layer's gate combine (gate_combine.h) against its ATen expression ----
// m7c_125m's training shape (kShapes[2], S=2048), one layer: B=8, H=12, dv=64,
// bf16 branch outputs, fp32 gates as the transpose of [B,S,3,H] (as gate_values
// gives them).
// Arg impl: 0 = ATen (nsa::gated_sum, what combine_branches runs without the
// kernel), 1 = the kernel, through autograd in both; Fwd is the forward alone,
// FwdBwd the forward and the gradients of all four inputs (autograd::grad, so
// nothing accumulates across iterations). Bytes of the napkin math, R = B·S·H
// rows, each tensor once: forward reads 3 o_c and g, writes o: 4·R·dv·2 + R·3·4;
// backward reads dO, 3 o_c and g, writes 3 d o_c and dg: 7·R·dv·2 + 2·R·3·4.
template <bool BWD>
void BM_GateCombine(benchmark::State& state) {
  if (!require_device(state)) return;
  constexpr Shape sh = kShapes[2];
  constexpr int64_t B = sh.B, S = 2048, H = sh.H, dv = sh.dv, R = B * S * H;
  const bool fused = state.range(0) == 1;
  const auto bf16 = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  at::Tensor o[3];
  for (auto& t : o) t = at::randn({B, S, H, dv}, bf16).requires_grad_(BWD);
  const at::Tensor g_base = at::rand({B, S, 3, H}, bf16.dtype(at::kFloat)).requires_grad_(BWD);
  const at::Tensor dout = at::randn({B, S, H, dv}, bf16);
  const GateColumns cols{0, 1, 2};
  const double ms = time_it(state, [&] {
    const at::Tensor g = g_base.transpose(2, 3);
    const at::Tensor y = fused ? gate_combine(o, g, cols) : nsa::gated_sum(o, g, cols);
    if (BWD) torch::autograd::grad({y}, {o[0], o[1], o[2], g_base}, {dout});
  });
  static std::map<bool, double> aten_ms;  // per direction, for the kernel's speedup
  if (!fused) aten_ms[BWD] = ms;
  else if (aten_ms.count(BWD) && ms > 0) state.counters["speedup_vs_aten"] = aten_ms[BWD] / ms;
  const double bytes = (4.0 * R * dv * 2 + R * 3 * 4) + (BWD ? 7.0 * R * dv * 2 + 2 * R * 3 * 4 : 0.0);
  state.SetLabel(fused ? "kernel" : "aten");
  state.counters["us"] = 1e3 * ms;
  state.counters["GB/s"] = ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0;
}
BENCHMARK(BM_GateCombine<false>)->Name("BM_GateCombineFwd")->Arg(0)->Arg(1)->ArgName("impl")->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GateCombine<true>)->Name("BM_GateCombineFwdBwd")->Arg(0)->Arg(1)->ArgName("impl")->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// ---- The block around the attention at m7c_125m's training shape ---------------
// One layer's MLP (nsa::swiglu_mlp: GEMMs included) and one residual add + norm
// (nsa::add_rms_norm), forward and backward, B=8, S=2048, D=768, F=2048, bf16
// activations and fp32 master weights as the model keeps them: impl 0 = the
// ATen ops (NSA_FUSED_MLP / NSA_FUSED_NORM = 0), 1 = the fused kernels.
constexpr int64_t kBlockRows = 8 * 2048, kBlockD = 768, kBlockF = 2048;

nsa::Runtime block_runtime(bool fused) {
  nsa::Runtime rt;
  rt.flags.set("NSA_FUSED_MLP", fused ? "1" : "0");
  rt.flags.set("NSA_FUSED_NORM", fused ? "1" : "0");
  rt.resolve();
  return rt;
}

void record_speedup(benchmark::State& state, const char* what, bool fused, double ms) {
  static std::map<std::string, double> aten_ms;
  if (!fused) aten_ms[what] = ms;
  else if (aten_ms.count(what) && ms > 0) state.counters["speedup_vs_aten"] = aten_ms[what] / ms;
  state.SetLabel(fused ? "kernel" : "aten");
  state.counters["us"] = 1e3 * ms;
}

void BM_MlpFwdBwd(benchmark::State& state) {
  if (!require_device(state)) return;
  const bool fused = state.range(0) == 1;
  nsa::cuda::register_with_layer();
  const auto f32 = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  nsa::BlockWeights b;
  b.w_gate = (at::randn({kBlockD, kBlockF}, f32) * 0.02).requires_grad_();
  b.w_up = (at::randn({kBlockD, kBlockF}, f32) * 0.02).requires_grad_();
  b.w_down = (at::randn({kBlockF, kBlockD}, f32) * 0.02).requires_grad_();
  const at::Tensor h = at::randn({8, 2048, kBlockD}, f32.dtype(at::kBFloat16)).requires_grad_();
  const at::Tensor dout = at::randn({8, 2048, kBlockD}, f32.dtype(at::kBFloat16));
  const nsa::Runtime rt = block_runtime(fused);
  const double ms = time_it(state, [&] {
    const at::Tensor y = nsa::swiglu_mlp(h, b, at::kBFloat16, rt);
    torch::autograd::grad({y}, {h, b.w_gate, b.w_up, b.w_down}, {dout});
  });
  record_speedup(state, "mlp", fused, ms);
  // Useful work: three [rows, D] × [D, F] GEMMs forward, twice that backward.
  state.counters["TFLOP/s"] = ms > 0 ? 18.0 * kBlockRows * kBlockD * kBlockF / (ms * 1e-3) / 1e12 : 0;
}
BENCHMARK(BM_MlpFwdBwd)->Arg(0)->Arg(1)->ArgName("impl")->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_AddRmsNormFwdBwd(benchmark::State& state) {
  if (!require_device(state)) return;
  const bool fused = state.range(0) == 1;
  nsa::cuda::register_with_layer();
  const auto bf16 = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor x = at::randn({8, 2048, kBlockD}, bf16).requires_grad_();
  const at::Tensor delta = at::randn({8, 2048, kBlockD}, bf16).requires_grad_();
  const at::Tensor w = at::ones({kBlockD}, bf16.dtype(at::kFloat)).requires_grad_();
  const at::Tensor ds = at::randn({8, 2048, kBlockD}, bf16), dh = at::randn({8, 2048, kBlockD}, bf16);
  const nsa::Runtime rt = block_runtime(fused);
  const double ms = time_it(state, [&] {
    const auto [s, h] = nsa::add_rms_norm(x, delta, w, 1e-5, rt);
    torch::autograd::grad({s, h}, {x, delta, w}, {ds, dh});
  });
  record_speedup(state, "norm", fused, ms);
  // The least either way must move: x, delta, s, h forward; ds, dh, s, dx backward (bf16).
  state.counters["GB/s"] = ms > 0 ? 8.0 * kBlockRows * kBlockD * 2 / (ms * 1e-3) / 1e9 : 0;
}
BENCHMARK(BM_AddRmsNormFwdBwd)->Arg(0)->Arg(1)->ArgName("impl")->UseManualTime()->Unit(benchmark::kMicrosecond);

// ---- Decode: one new token against caches of S tokens (t = S - 1) -------------
// BM_DecodeStepGraph replays the captured decode step (decode_graph.h: the four
// launches of decode_attention.h, length in device memory); args {shape, S,
// version} (version 2 = tensor cores, 1 = SIMT). BM_DenseSdpaDecode is one query
// against all S cached keys through at::scaled_dot_product_attention, the
// fastest backend that accepts the shape (label). Bytes of the napkin math: each
// KV token read once, (dk + dv) * 2 bytes per group; dense reads S tokens, NSA
// reads kv_tokens = compressed blocks n_cmp(t) + selected tokens <= t + window
// tokens (per group, from the step's own block_idx, as BM_DecodeKvTokens counts).
// Counters: ms / us = median of single synchronised steps (host launch included);
// us_back_to_back = mean of 32 steps issued back to back (GPU time per step);
// hbm_share = the K/V bytes over us_back_to_back as a share of peak_hbm_gbs().

// Mean microseconds per call of `n` calls issued back to back between two events.
double back_to_back_us(const std::function<void()>& fn, int n = 32) {
  fn();
  NSA_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  NSA_CUDA_CHECK(cudaEventCreate(&a));
  NSA_CUDA_CHECK(cudaEventCreate(&b));
  NSA_CUDA_CHECK(cudaEventRecord(a));
  for (int i = 0; i < n; ++i) fn();
  NSA_CUDA_CHECK(cudaEventRecord(b));
  NSA_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0.f;
  NSA_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  NSA_CUDA_CHECK(cudaEventDestroy(a));
  NSA_CUDA_CHECK(cudaEventDestroy(b));
  return 1e3 * ms / n;
}

// The device's peak HBM bandwidth in GB/s (nsa/device_peak.h).
double peak_hbm_gbs() {
  int dev = 0, khz = 0, bits = 0;
  NSA_CUDA_CHECK(cudaGetDevice(&dev));
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev));
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  return nsa::hbm_peak_gbs(khz, bits);
}

// Dense decode: q [B,1,H,dk] viewed as [B,G,h,dk] (the h heads of a group are h
// query rows of one KV head: GQA without copying K/V, any backend), K/V caches
// [B,S,G,d] viewed as [B,G,S,d]; no mask (the token sees every cached key).
struct DenseDecode {
  at::Tensor q, k, v;
  double scale;
  DenseDecode(const Shape& s, int64_t S) {
    const auto o = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
    q = at::randn({s.B, 1, s.H, s.dk}, o).view({s.B, s.G, s.H / s.G, s.dk});
    k = at::randn({s.B, S, s.G, s.dk}, o).transpose(1, 2);
    v = at::randn({s.B, S, s.G, s.dv}, o).transpose(1, 2);
    scale = 1.0 / std::sqrt(double(s.dk));
  }
  at::Tensor run() const { return at::scaled_dot_product_attention(q, k, v, {}, 0.0, false, scale); }
};

struct SdpaChoice {
  std::string backend;
  int index = -1;  // into kSdpaBackends
  double us = 0;   // median single call
  double us_back_to_back = 0;
};
struct SdpaBackendSwitch {
  const char* name;
  void (at::Context::*set)(bool);
};
const SdpaBackendSwitch kSdpaBackends[] = {{"cudnn", &at::Context::setSDPUseCuDNN},
                                           {"flash", &at::Context::setSDPUseFlash},
                                           {"efficient", &at::Context::setSDPUseMemEfficient},
                                           {"math", &at::Context::setSDPUseMath}};
// Enables only backend i (-1: restore the defaults, all on).
void sdpa_only(int i) {
  for (int j = 0; j < int(std::size(kSdpaBackends)); ++j) (at::globalContext().*kSdpaBackends[j].set)(i < 0 || i == j);
}
double median_us(const std::function<void()>& fn, int reps = 9) {
  fn();
  NSA_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  NSA_CUDA_CHECK(cudaEventCreate(&a));
  NSA_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    NSA_CUDA_CHECK(cudaEventRecord(a));
    fn();
    NSA_CUDA_CHECK(cudaEventRecord(b));
    NSA_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0.f;
    NSA_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  NSA_CUDA_CHECK(cudaEventDestroy(a));
  NSA_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[ms.size() / 2];
}
// The fastest SDPA backend for the dense decode of (shape, S), measured once
// per (shape, S) and remembered (BM_DecodeStepGraph reads it for its speedup).
SdpaChoice fastest_sdpa(int64_t shape, int64_t S) {
  static std::map<std::pair<int64_t, int64_t>, SdpaChoice> cache;
  if (auto it = cache.find({shape, S}); it != cache.end()) return it->second;
  const DenseDecode d(kShapes[shape], S);
  SdpaChoice best;
  for (int i = 0; i < int(std::size(kSdpaBackends)); ++i) {
    sdpa_only(i);
    try {
      const double us = median_us([&] { d.run(); });
      if (best.index < 0 || us < best.us) best = {kSdpaBackends[i].name, i, us};
    } catch (const c10::Error&) {  // this backend does not take the shape
    }
  }
  if (best.index >= 0) {
    sdpa_only(best.index);
    best.us_back_to_back = back_to_back_us([&] { d.run(); });
  }
  sdpa_only(-1);
  return cache[{shape, S}] = best;
}

void BM_DenseSdpaDecode(benchmark::State& state) {
  if (!require_device(state)) return;
  const Shape& sh = kShapes[state.range(0)];
  const int64_t S = state.range(1);
  const SdpaChoice choice = fastest_sdpa(state.range(0), S);
  if (choice.index < 0) {
    state.SkipWithError("no SDPA backend accepts the shape");
    return;
  }
  const DenseDecode d(sh, S);
  sdpa_only(choice.index);
  const double ms = time_it(state, [&] { d.run(); });
  const double b2b = back_to_back_us([&] { d.run(); });
  sdpa_only(-1);
  state.SetLabel("backend=" + choice.backend);
  state.counters["ms"] = ms;
  state.counters["us"] = 1e3 * ms;
  state.counters["us_back_to_back"] = b2b;
  state.counters["kv_tokens"] = double(S);
  state.counters["GB/s"] = double(S) * sh.B * sh.G * (sh.dk + sh.dv) * 2 / (ms * 1e-3) / 1e9;
  state.counters["hbm_share"] = double(S) * sh.B * sh.G * (sh.dk + sh.dv) * 2 / (b2b * 1e-6) / 1e9 / peak_hbm_gbs();
}

// KV tokens one step read per group, from the step's block_idx [B,1,G,n].
double decode_kv_tokens(int64_t S, const at::Tensor& block_idx) {
  const int t = int(S - 1);
  int lo, hi;
  contiguous_key_range(Branch::Compressed, t, t, 1 << 30, kW, kL, kD, &lo, &hi);
  double tokens = hi - lo;
  contiguous_key_range(Branch::Window, t, t, int(S), int(kW), kL, kD, &lo, &hi);
  tokens += hi - lo;
  const at::Tensor idx = block_idx.cpu();
  const auto a = idx.accessor<int, 4>();
  double selected = 0;
  for (int64_t b = 0; b < idx.size(0); ++b)
    for (int64_t g = 0; g < idx.size(2); ++g)
      for (int64_t s = 0; s < idx.size(3); ++s) {
        selected_key_range(a[b][0][g][s], t, int(S), int(kLp), &lo, &hi);
        selected += hi - lo;
      }
  return tokens + selected / double(idx.size(0) * idx.size(2));
}

// The decode step of `sh` at capacity S (bf16, the paper's hyper-parameters)
// captured as a graph, its inputs random (never time on zeros).
std::unique_ptr<DecodeGraph> random_decode_graph(const Shape& sh, int64_t S, int version) {
  DecodeShape ds;
  ds.B = sh.B, ds.H = sh.H, ds.G = sh.G, ds.dk = sh.dk, ds.dv = sh.dv, ds.capacity = S;
  ds.dtype = at::kBFloat16;
  DecodeHyper hp;
  hp.cmp_block = kL, hp.cmp_stride = kD, hp.sel_block = kLp, hp.n_sel = kN, hp.window = kW;
  auto graph = std::make_unique<DecodeGraph>(ds, hp, version);
  const DecodeCaches& in = graph->inputs();
  for (const at::Tensor* t : {&in.q, &in.k_cmp, &in.v_cmp, &in.k_slc, &in.v_slc, &in.k_win, &in.v_win})
    t->normal_();
  return graph;
}

// Counters us (a synchronised single replay) and us_back_to_back (GPU time per
// replay, 32 issued back to back) of `graph` at length S.
void time_decode_replays(benchmark::State& state, DecodeGraph& graph, int64_t S) {
  const double ms = time_it(state, [&] { graph.replay(S); });
  state.counters["us"] = 1e3 * ms;
  state.counters["us_back_to_back"] = back_to_back_us([&] { graph.replay(S); });
}

void BM_DecodeStepGraph(benchmark::State& state) {
  if (!require_device(state)) return;
  const Shape& sh = kShapes[state.range(0)];
  const int64_t S = state.range(1);
  const std::unique_ptr<DecodeGraph> captured = random_decode_graph(sh, S, int(state.range(2)));
  DecodeGraph& graph = *captured;
  const double ms = time_it(state, [&] { graph.replay(S); });
  const double b2b = back_to_back_us([&] { graph.replay(S); });
  const double kv = decode_kv_tokens(S, graph.outputs().block_idx);
  state.SetLabel("v" + std::to_string(graph.plan().version));
  state.counters["ms"] = ms;
  state.counters["us"] = 1e3 * ms;
  state.counters["us_back_to_back"] = b2b;
  state.counters["kv_tokens"] = kv;
  state.counters["paper_table4"] = double(S) / kD + kN * kLp + kW;
  state.counters["dense_tokens"] = double(S);
  state.counters["cmp_split"] = graph.plan().n_cmp_split;
  state.counters["GB/s"] = kv * sh.B * sh.G * (sh.dk + sh.dv) * 2 / (ms * 1e-3) / 1e9;
  // The K/V bytes the step needs, over its back-to-back GPU time, as a share of
  // the peak: what issue #15's "≥ 60 % of HBM bandwidth" reads.
  state.counters["hbm_share"] = kv * sh.B * sh.G * (sh.dk + sh.dv) * 2 / (b2b * 1e-6) / 1e9 / peak_hbm_gbs();
  const SdpaChoice dense = fastest_sdpa(state.range(0), S);
  if (dense.index >= 0) {
    state.counters["speedup_vs_sdpa"] = dense.us / (1e3 * ms);
    state.counters["dense_us"] = dense.us;
    state.counters["speedup_back_to_back"] = dense.us_back_to_back / b2b;
  }
}

// The decode step's launch choices (decode_attention.h): the fewest compressed
// keys per split-K CTA (set_decode_cmp_split_keys; 0 = the default) and the
// chained launches (set_decode_chained_launches; 1 = on, the default where the
// GPU has them). Args {shape, S, keys, chained}, v2; step time only (the
// speedup is BM_DecodeStepGraph's).
void BM_DecodeLaunchChoices(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<int> keys(decode_cmp_split_keys_forced(), set_decode_cmp_split_keys, int(state.range(2)));
  const ScopedChoice<bool> chained(decode_chained_launches(), set_decode_chained_launches, state.range(3) != 0);
  const int64_t S = state.range(1);
  const std::unique_ptr<DecodeGraph> graph = random_decode_graph(kShapes[state.range(0)], S, 2);
  time_decode_replays(state, *graph, S);
  state.counters["cmp_split"] = graph->plan().n_cmp_split;
  state.counters["chained"] = graph->plan().chained;
}
// Where a decode step's time goes: the step stopped after its first `launches`
// launches (set_decode_stop_after; 0 = a replay's length kernel alone, 4 = the
// whole step), replayed as a graph. Each prefix's time less the one before is that
// launch's share of the chain, with its start-up gap. Args {shape, S, launches}, v2.
void BM_DecodeStepPrefix(benchmark::State& state) {
  if (!require_device(state)) return;
  const ScopedChoice<int> stop(decode_stop_after(), set_decode_stop_after, int(state.range(2)));
  const int64_t S = state.range(1);
  time_decode_replays(state, *random_decode_graph(kShapes[state.range(0)], S, 2), S);
}
BENCHMARK(BM_DecodeStepPrefix)->Apply([](benchmark::internal::Benchmark* b) {
  for (const auto& [shape, S] : {std::pair<int, int64_t>{0, 65536}, {1, 8192}, {1, 65536}, {4, 65536}})
    for (int64_t launches : {0, 1, 2, 3, 4}) b->Args({shape, S, launches});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->ArgNames({"shape", "S", "launches"});
});

BENCHMARK(BM_DecodeLaunchChoices)->Apply([](benchmark::internal::Benchmark* b) {
  for (const auto& [shape, S] : {std::pair<int, int64_t>{0, 65536}, {1, 8192}, {1, 65536}})
    for (int64_t chained : {1, 0})
      for (int64_t keys : {0, 64, 128}) b->Args({shape, S, keys, chained});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->ArgNames({"shape", "S", "keys", "chained"});
});

void DecodeSizes(benchmark::internal::Benchmark* b, bool versions) {
  for (int shape : {0, 1})
    for (int64_t S : {8192, 16384, 32768, 65536}) {
      if (!versions) b->Args({shape, S});
      else
        for (int version : {2, 1}) b->Args({shape, S, version});
    }
  // m7c at batch 64, 64k: a step that needs 185 MB of K/V (where its HBM share can be read).
  if (!versions) b->Args({4, 65536});
  else b->Args({4, 65536, 2});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
  if (versions) b->ArgNames({"shape", "S", "version"});
  else b->ArgNames({"shape", "S"});
}
BENCHMARK(BM_DenseSdpaDecode)->Apply([](benchmark::internal::Benchmark* b) { DecodeSizes(b, false); });
BENCHMARK(BM_DecodeStepGraph)->Apply([](benchmark::internal::Benchmark* b) { DecodeSizes(b, true); });

// The projection's epilogue (split + RoPE + contiguous parts) at m7c_125m's
// training shape (B=8, S=2048, H=12, G=2, dk=dv=64, bf16), through
// nsa::split_projection and then .contiguous() of every part, as the layer
// uses them: impl 0 = the ATen ops (no kernel registered), 1 = the fused
// kernel. Bwd: the gradient of y from all seven parts' gradients, from one
// forward. GB/s counts y and the parts once each (the least any way moves).
template <bool BWD>
void BM_ProjectionEpilogue(benchmark::State& state) {
  if (!require_device(state)) return;
  const bool fused = state.range(0) == 1;
  ProjectionSplit s;
  s.n_heads = 12, s.n_groups = 2, s.d_k = 64, s.d_v = 64;
  const int64_t B = 8, S = 2048;
  const at::Tensor y =
      at::randn({B, S, s.width()}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16)).requires_grad_(BWD);
  register_projection_epilogue(fused ? &projection_epilogue_hook : nullptr);
  const auto forward = [&] {
    std::vector<at::Tensor> parts = split_projection(y, s, 0);
    for (auto& part : parts) part = part.contiguous();
    return parts;
  };
  double ms;
  if (!BWD) {
    ms = time_it(state, [&] { forward(); });
  } else {
    const std::vector<at::Tensor> parts = forward();
    std::vector<at::Tensor> grads;
    for (const auto& part : parts) grads.push_back(at::randn_like(part));
    ms = time_it(state, [&] { torch::autograd::grad(parts, {y}, grads, /*retain_graph=*/true); });
  }
  register_projection_epilogue(nullptr);
  static std::map<bool, double> aten_ms;
  if (!fused) aten_ms[BWD] = ms;
  else if (aten_ms.count(BWD) && ms > 0) state.counters["speedup_vs_aten"] = aten_ms[BWD] / ms;
  state.counters["ms"] = ms;
  state.counters["GB/s"] = ms > 0 ? 2.0 * double(y.nbytes()) / (ms * 1e-3) / 1e9 : 0;
}
BENCHMARK(BM_ProjectionEpilogue<false>)->Name("BM_ProjectionEpilogueFwd")->Arg(0)->Arg(1)->ArgNames({"impl"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ProjectionEpilogue<true>)->Name("BM_ProjectionEpilogueBwd")->Arg(0)->Arg(1)->ArgNames({"impl"})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace nsa::cuda

// BENCHMARK_MAIN, with the device's peak in the run's context (the JSON's
// "context" object) so a share can be read back as TFLOP/s.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // What the figures were measured on, in the JSON's context, so a benchmark
  // file names its GPU and software without a log beside it
  // (scripts/perf_section.py reads them).
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  if (const char* rev = std::getenv("NSA_HARNESS_REVISION"); rev && *rev) benchmark::AddCustomContext("revision", rev);
  if (nsa::cuda::kernels_available()) {
    int driver = 0, runtime = 0;
    const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();  // ATen's cached copy
    benchmark::AddCustomContext("gpu", prop->name);
    benchmark::AddCustomContext("sm", std::to_string(prop->major) + "." + std::to_string(prop->minor));
    const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    if (cudaDriverGetVersion(&driver) == cudaSuccess) benchmark::AddCustomContext("cuda_driver_api", version(driver));
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) benchmark::AddCustomContext("cuda_runtime", version(runtime));
    const nsa::TensorPeak& peak = nsa::cuda::device_bf16_peak();
    benchmark::AddCustomContext("dense_bf16_peak_tflops", peak.tflops > 0 ? std::to_string(peak.tflops) : "unknown");
    benchmark::AddCustomContext("dense_bf16_peak_source", peak.source);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
