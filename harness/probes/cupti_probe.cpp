// The CUPTI probe (CUDA builds, CUDA cells): kernel trace, NVTX/phase ranges, a
// Chrome trace written as the run goes, the kernel flight recorder, and the
// routing check of the kernels that actually ran against the NSA_USE_CUDA_*
// flags. All CUPTI handling stays in harness/trace; this file only wires it.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <ATen/cuda/CUDAContext.h>

#include "harness/probes/probes.h"
#include "harness/trace/chrome_trace_writer.h"
#include "harness/trace/async_trace_writer.h"
#include "harness/trace/cupti_tracer.h"
#include "harness/trace/event_store.h"
#include "harness/trace/flight_recorder.h"
#include "harness/trace/nvtx.h"
#include "harness/trace/range_index.h"
#include "harness/trace/range_recorder.h"
#include "harness/trace/routing_check.h"
#include "harness/trace/trace_processor.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/determinism.h"

namespace harness {
namespace {
namespace tr = harness::trace;

// Kernel-name patterns per branch: CUPTI reports the demangled signature
// ("void nsa_window_fwd_kernel<c10::BFloat16>(…)"), so match anywhere in it.
const char* branch_pattern(const std::string& branch) {
  if (branch == "win") return "*nsa_window_*";
  if (branch == "slc") return "*nsa_selected_*";
  return "*nsa_compressed_*";
}
// libtorch's FlashAttention-2 forward ("pytorch_flash::flash_fwd_kernel<…>",
// or its split-KV variant), which the window branch runs where it applies.
constexpr const char* kFlashForward = "*flash_fwd*";
// cuDNN's fused attention (its generated kernels are named "…sdpa…"), which
// the window branch runs through nsa/cuda/window_cudnn.h.
constexpr const char* kCudnnAttention = "*sdpa*";
// The decode kernels (nsa/cuda/decode_attention.h), which the sequential
// prefill runs token by token on CUDA.
constexpr const char* kDecodeKernels = "*nsa_decode_*";
// The MLP's fused activation (nsa/cuda/swiglu.h), in NSA and dense cells alike.
constexpr const char* kSwigluKernels = "*nsa_swiglu_*";
// Each residual add fused with the RMSNorm after it (nsa/cuda/add_rms_norm.h), likewise.
constexpr const char* kAddRmsNormKernels = "*nsa_add_rms_norm_*";

// Should the window branch run FlashAttention-2 in this cell? Written again
// from NSA_SDPA_NO_FLASH's documented meaning (nsa/flags.cpp), never shared with
// the layer's own choice: an expectation copied from the code under test would
// agree with its bugs.
bool is_16bit(at::ScalarType dt) { return dt == at::kHalf || dt == at::kBFloat16; }
bool window_expects_flash(const ProbeContext& ctx) {
  if (ctx.rt.flags.get_bool("NSA_SDPA_NO_FLASH")) return false;
  if (!is_16bit(ctx.trainer.compute())) return false;
  const auto& c = ctx.model.config();
  if (c.d_k != c.d_v || c.d_k % 8 != 0 || c.d_k > 256) return false;
  return at::cuda::getCurrentDeviceProperties()->major >= 8;
}

// May the window branch not run cuDNN's attention in this cell? Written again
// from NSA_WINDOW_CUDNN's documented meaning, like window_expects_flash:
// switched off, or FA2 asked for instead.
bool window_forbids_cudnn(const ProbeContext& ctx) {
  return !ctx.rt.flags.get_bool("NSA_SDPA_NO_FLASH") || !ctx.rt.flags.get_bool("NSA_WINDOW_CUDNN");
}
// Must it? Allowed, 16-bit, and a head shape every cuDNN 9 engine on Hopper
// takes (dk = dv, a multiple of 16 up to 128). cuDNN may take more shapes than
// these; there the probe requires nothing either way.
bool window_expects_cudnn(const ProbeContext& ctx) {
  if (window_forbids_cudnn(ctx) || !is_16bit(ctx.trainer.compute())) return false;
  const auto& c = ctx.model.config();
  if (c.d_k != c.d_v || c.d_k % 16 != 0 || c.d_k > 128) return false;
  return at::cuda::getCurrentDeviceProperties()->major >= 9;
}

// May the compressed branch run cuDNN's attention in this cell? Written again
// from NSA_COMPRESSED_CUDNN's documented meaning (nsa/flags.cpp), like the
// window's: not 0, 16-bit, the sequence a multiple of the compression stride,
// and under auto the layer's call of one rank at least 2^34 in
// B·H·S·S_cmp·(dk+dv). cuDNN may still decline the shape: the probe then
// requires nothing of either kernel family.
bool compressed_may_run_cudnn(const ProbeContext& ctx) {
  const std::string v = ctx.rt.flags.get_string("NSA_COMPRESSED_CUDNN");
  if (v == "0" || !is_16bit(ctx.trainer.compute())) return false;
  const auto& c = ctx.model.config();
  const double S = ctx.spec.train.seq_len, d = c.nsa.cmp_stride, l = c.nsa.cmp_block;
  if (ctx.spec.train.seq_len % c.nsa.cmp_stride != 0) return false;
  if (v == "1") return true;
  const double B = double(ctx.spec.train.batch) / std::max(1, ctx.spec.train.world_size);
  const double S_cmp = S >= l ? std::floor((S - l) / d) + 1 : 0;
  return B * c.n_heads * S * S_cmp * (c.d_k + c.d_v) >= 17179869184.0;
}

// `every: N` traces steps 1, 2 and every N-th step: CUPTI's records cost a few
// microseconds per kernel launch, which a launch-bound step (thousands of small
// kernels) feels; the first two steps always show warm-up and the routing.
class CuptiProbe : public Probe {
 public:
  explicit CuptiProbe(const ProbeSpec& spec) : every_(std::max(1, spec.every)) {}
  void set_observing(bool on) override { observing_ = on; }
  // The always-traced first steps need the kernels launched one by one under
  // their layer and branch ranges (and run eagerly anyway); so does every
  // step under `every: 1`. A sampled step later in the run is traced as it
  // runs: CUPTI records each kernel a graph replay launches, charged to the
  // step's "graph replay" range — the kernels and their times without the
  // per-layer split, at the cost of a replay instead of an eager step.
  // Between traced steps the flight recorder sees a graph replay as one launch.
  bool watches_inside(int step) const override {
    return tracer_ && observing_ && (every_ <= 1 || step <= kAlwaysTracedSteps);
  }
  // Posted collections use tracer_ and retained_: the writer stops before they
  // go. Normally on_run_end closed it already; after an error nothing queued
  // runs (deadline 0) and a collection in hand gets a short grace.
  ~CuptiProbe() override {
    if (writer_) writer_->close({}, tr::CuptiTracer::timestamp_ns(), 0.0);
  }

  void on_start(ProbeContext& ctx) override {
    if (!ctx.device.is_cuda()) return;
    namespace fs = std::filesystem;
    try {
      flight_ = std::make_unique<tr::FlightRecorder>((fs::path(ctx.out_dir) / tr::kFlightRecorderFile).string());
      tr::CuptiTracerOptions opt;
      opt.flight = flight_.get();
      opt.ranges = &ranges_;
      tracer_ = std::make_unique<tr::CuptiTracer>(opt);
      if (!tracer_->start()) {
        ctx.table("cupti", {{"active", false}, {"errors", tracer_->errors()}});
        tracer_.reset();
        return;
      }
      // The file has a budget (`cupti: {trace_budget_mb: N}`, default 100): past
      // it events are counted, not written; the summary and the flight recorder
      // still see every record.
      tr::ChromeTraceOptions topt;
      budget_mb_ = ctx.spec.probes.count("cupti") ? ctx.spec.probes.at("cupti").options.value("trace_budget_mb", 100.0) : 100.0;
      topt.max_file_bytes = static_cast<std::uint64_t>(budget_mb_ * 1024 * 1024);
      writer_ = std::make_unique<tr::AsyncTraceWriter>((fs::path(ctx.out_dir) / protocol::kTraceFile).string(),
                                                       4'000'000, topt);
      writer_->write_info({{"cell", ctx.spec.id}, {"device", ctx.device.str()}});
    } catch (const std::exception& e) {
      // Tracing degrades, the run goes on.
      ctx.table("cupti", {{"active", false}, {"errors", {e.what()}}});
      tracer_.reset();
    }
  }

  void on_phase(bool begin, std::string_view name, int layer, int step) override {
    if (!tracer_) return;
    if (name == "step" && begin) {
      // An unobserved step (`probes: alternate`) runs as if no probe were
      // there: no records, no launch callback, no ranges.
      tracer_->set_launch_callbacks(observing_);
      if (!observing_) tracer_->set_recording(false);
    }
    if (!observing_) return;
    if (begin) {
      std::string label = name == "step" ? tr::step_range_name(step)
                                         : (layer >= 0 ? std::string(name) + " " + std::to_string(layer) : std::string(name));
      if (name == "step") {
        if (flight_) flight_->set_step(step);
        const bool traced = traced_step(step);
        tracer_->set_recording(traced);
        if (traced) traced_steps_.push_back(step);
      }
      ranges_.push(label);
      tr::nvtx::push(label);
    } else {
      tr::nvtx::pop();
      ranges_.pop();
    }
  }

  // The step's records are collected, converted and written on the trace
  // writer's thread: the training thread only queues the request (a skipped
  // request loses nothing — the next one takes everything since).
  void on_step_end(ProbeContext&) override {
    if (!tracer_) return;
    writer_->post([this] { return collect(); });
  }

  void on_run_end(ProbeContext& ctx) override {
    if (!tracer_) return;
    writer_->post([this] {
      tracer_->stop();
      return collect();
    }, SIZE_MAX);
    // retained_ belongs to the writer's thread until it has drained. A heavy
    // trace can keep it busy for a while: say so every few seconds, so the
    // supervisor sees a child that is finishing, not a silent one.
    bool drained = false;
    for (double waited = 0; !drained && waited < kDrainDeadlineS; waited += kDrainTickS) {
      drained = writer_->drain(kDrainTickS);
      if (!drained)
        ctx.events.emit(protocol::ev::progress, {{"what", "trace writer"}, {"waited_s", waited + kDrainTickS}});
    }
    if (!drained) {
      ctx.table("trace_writer", {{"drained", false}, {"deadline_s", kDrainDeadlineS}});
      return;  // the worker may still touch retained_: no summary rather than a race
    }
    writer_->close(retained_.counters, tr::CuptiTracer::timestamp_ns());
    retained_.counters.events_dropped_writer_behind = writer_->events_dropped();
    auto summary = tr::process_trace(retained_.events, retained_.counters);
    summary.trace_every = every_;
    summary.file = TraceFile{budget_mb_, writer_->file_bytes(), writer_->events_over_budget()};
    summary.traced_steps = traced_steps_;
    ctx.table("trace", summary);
    nlohmann::json kernels = nlohmann::json::array();
    for (size_t i = 0; i < summary.kernels.size() && i < 15; ++i) kernels.push_back(summary.kernels[i]);
    ctx.table("kernels", kernels);
    check_routing(ctx, summary);
  }

 private:
  double budget_mb_ = 100;
  bool traced_step(int step) const { return every_ <= 1 || step <= kAlwaysTracedSteps || step % every_ == 0; }
  static constexpr int kAlwaysTracedSteps = 2;

  // Runs on the writer's thread. Returns a copy for the file; the run-end
  // summary keeps the originals.
  std::vector<tr::TraceEvent> collect() {
    tracer_->flush();
    auto events = tracer_->take_events();
    auto ranges = ranges_.take_completed();
    events.insert(events.end(), ranges.begin(), ranges.end());
    std::vector<tr::TraceEvent> for_file = events;
    retained_.counters = tracer_->counters();
    retained_.append(std::move(events));
    return for_file;
  }

  static constexpr double kDrainDeadlineS = 300.0;
  static constexpr double kDrainTickS = 5.0;

  void check_routing(ProbeContext& ctx, const TraceSummary& summary) {
    auto& rt = ctx.rt;
    std::vector<tr::RoutingExpectation> exp;
    // The block's MLP and its residual adds + norms, whatever the attention: the
    // fused kernels unless their flag is 0.
    for (auto [flag, kernels] : {std::pair{"NSA_FUSED_MLP", kSwigluKernels},
                                 std::pair{"NSA_FUSED_NORM", kAddRmsNormKernels}}) {
      tr::RoutingExpectation e;
      const bool fused = rt.flags.get_bool(flag);
      e.flag = std::string(flag) + (fused ? "=1" : "=0");
      (fused ? e.must_launch : e.must_not_launch).push_back(kernels);
      exp.push_back(e);
    }
    // The reference path and a dense-attention model (the yardstick) launch
    // no NSA attention kernels by design, whatever the branch flags say.
    const bool attention_kernels = !(rt.force_reference || ctx.model.is_dense());
    if (attention_kernels && !rt.prefill_batched) {
      // The sequential prefill: the decode kernels, or with NSA_USE_CUDA_DECODE=0
      // the ATen decode step, which launches none of them. (Its backward runs
      // the branch kernels; the branch flags do not apply to it.)
      tr::RoutingExpectation e;
      e.flag = std::string("NSA_PREFILL_BATCHED=0, NSA_USE_CUDA_DECODE=") + (rt.use_cuda_decode ? "1" : "0");
      (rt.use_cuda_decode ? e.must_launch : e.must_not_launch).push_back(kDecodeKernels);
      exp.push_back(e);
    }
    for (auto [branch, on, flag] : {std::tuple{"cmp", rt.use_cuda_cmp, "NSA_USE_CUDA_CMP"},
                                    std::tuple{"slc", rt.use_cuda_sel, "NSA_USE_CUDA_SEL"},
                                    std::tuple{"win", rt.use_cuda_win, "NSA_USE_CUDA_WIN"}}) {
      if (!attention_kernels || !rt.prefill_batched) break;
      tr::RoutingExpectation e;
      e.flag = std::string(flag) + (on ? "=1" : "=0");
      const std::string b = branch;
      if (!on) {
        // Switched off: neither of the window's fused kernels may run (the
        // batched fallback gathers its keys with ATen, no FlashAttention).
        e.must_not_launch.push_back(branch_pattern(b));
        if (b == "win") e.must_not_launch.push_back(kFlashForward);
        if (b == "win") e.must_not_launch.push_back(kCudnnAttention);
      } else if (b == "win" && window_expects_flash(ctx)) {
        // Our window kernel may still run beside it: the once-per-cell checks
        // run the layer in fp32 too, which FlashAttention-2 does not take.
        e.flag += ", NSA_SDPA_NO_FLASH=0";
        e.must_launch.push_back(kFlashForward);
        e.must_not_launch.push_back(kCudnnAttention);
      } else if (b == "win" && window_expects_cudnn(ctx)) {
        // Likewise our kernel may run beside it (fp32 checks). The backward
        // (NSA_WINDOW_BWD) is named for the record, not checked by kernel name:
        // no run here has recorded the names of cuDNN's backward kernels, and
        // ours may run in the same cell either way (the finite probe's fp32
        // re-run of a non-finite step).
        e.flag += ", NSA_WINDOW_CUDNN=1, NSA_WINDOW_BWD=" + ctx.rt.flags.get_string("NSA_WINDOW_BWD");
        e.must_launch.push_back(kCudnnAttention);
        e.must_not_launch.push_back(kFlashForward);
      } else {
        // Our kernel, unless cuDNN was allowed a 16-bit window of a shape the
        // probe does not judge (cuDNN may or may not have taken it).
        const bool cudnn_may_have_run = b == "win" && !window_forbids_cudnn(ctx) && is_16bit(ctx.trainer.compute());
        // The compressed branch likewise, where cuDNN may have run it
        // (compressed_may_run_cudnn); its backward is named for the record.
        const bool cmp_cudnn = b == "cmp" && compressed_may_run_cudnn(ctx);
        // How our compressed backward makes dq (NSA_COMPRESSED_DQ) likewise, as
        // the selected branch's below.
        if (b == "cmp")
          e.flag += std::string(", NSA_COMPRESSED_CUDNN=") + ctx.rt.flags.get_string("NSA_COMPRESSED_CUDNN") +
                    (cmp_cudnn ? ", NSA_COMPRESSED_BWD=" + nsa::backward_choice(rt.flags, "NSA_COMPRESSED_BWD") : "") +
                    ", NSA_COMPRESSED_DQ=" + nsa::backward_choice(rt.flags, "NSA_COMPRESSED_DQ");
        if (!cudnn_may_have_run && !cmp_cudnn) e.must_launch.push_back(branch_pattern(b));
        // How the selected backward makes dq (NSA_SELECTED_DQ) is named for the record, not
        // checked by kernel name: the pattern matches the forward and dk/dv
        // kernels either way; with atomic the dq kernel is absent where the
        // atomic path applies but may still run in the same cell (the fp32
        // checks, shapes it does not take), and the accumulator's conversion
        // (nsa_dq_accum_to_output_kernel) is a helper no branch pattern matches.
        if (b == "slc") e.flag += ", NSA_SELECTED_DQ=" + nsa::backward_choice(rt.flags, "NSA_SELECTED_DQ");
        if (b == "win" && ctx.rt.flags.get_bool("NSA_SDPA_NO_FLASH")) {
          e.flag += ", NSA_SDPA_NO_FLASH=1";
          e.must_not_launch.push_back(kFlashForward);
        }
        if (b == "win" && window_forbids_cudnn(ctx)) {
          e.flag += ", NSA_WINDOW_CUDNN=0";
          // cuDNN's kernels are the compressed branch's where it may run them.
          if (!(rt.use_cuda_cmp && compressed_may_run_cudnn(ctx))) e.must_not_launch.push_back(kCudnnAttention);
        }
      }
      exp.push_back(e);
    }
    auto mismatches = tr::check_routing(exp, summary.kernels);
    nlohmann::json table = nlohmann::json::array();
    for (auto& e : exp) table.push_back({{"flag", e.flag}, {"must_launch", e.must_launch}, {"must_not_launch", e.must_not_launch}});
    ctx.table("routing_kernels", {{"expectations", table}, {"mismatches", mismatches}});
    for (auto& m : mismatches) {
      Finding f;
      f.code = std::string(reason::routing_mismatch);
      f.severity = Severity::blocking;
      f.step = ctx.step;
      f.title = m.kind == tr::RoutingMismatchKind::unexpected
                    ? "kernel " + (m.kernels.empty() ? m.pattern : m.kernels.front()) + " ran although " + m.flag
                    : "no kernel matching " + m.pattern + " ran although " + m.flag;
      f.detail = m.message + " (from the CUPTI kernel records of this run)";
      f.location = m.kernels.empty() ? m.pattern : m.kernels.front();
      f.evidence = m;
      ctx.report(f);
    }
  }

  tr::RangeRecorder ranges_{tr::CuptiTracer::timestamp_ns};
  std::unique_ptr<tr::FlightRecorder> flight_;
  std::unique_ptr<tr::CuptiTracer> tracer_;
  std::unique_ptr<tr::AsyncTraceWriter> writer_;
  tr::RetainedTrace retained_;
  int every_ = 1;
  bool observing_ = true;
  std::vector<int> traced_steps_;
};

}  // namespace

std::unique_ptr<Probe> make_cupti_probe(const ProbeSpec& spec) { return std::make_unique<CuptiProbe>(spec); }

}  // namespace harness
