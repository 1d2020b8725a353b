// Timing, syncs and memory: the cheap probes that summarise what every step
// already records.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "harness/probes/memory_growth.h"
#include "harness/probes/probes.h"
#ifdef NSA_WITH_FINITE_SCAN
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace harness {

bool all_finite(const at::Tensor& t) { return !t.defined() || at::isfinite(t).all().item<bool>(); }

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class TimingProbe : public Probe {
 public:
  void on_step_end(ProbeContext& ctx) override { (void)ctx; }
};

// Counts the model's reported host syncs per step; many per step is how a
// "hang" that is really a crawl shows itself.
class SyncsProbe : public Probe {
 public:
  void on_step_end(ProbeContext& ctx) override {
    per_step_.push_back(ctx.tap.sync_points);
    const int tokens = ctx.spec.train.seq_len * ctx.spec.train.batch;
    // More syncs than a step has layers × 4 means syncs inside the token loop.
    const int threshold = std::max(50, ctx.spec.model.n_layers * 4);
    if (!warned_ && ctx.tap.sync_points >= threshold) {
      warned_ = true;
      Finding f;
      f.code = std::string(reason::host_syncs);
      f.severity = Severity::warning;
      f.title = "host syncs inside the step: " + std::to_string(ctx.tap.sync_points) + " in step " + std::to_string(ctx.step);
      f.detail = "The model reported " + std::to_string(ctx.tap.sync_points) +
                 " device→host synchronisations in one step (" + std::to_string(tokens) +
                 " tokens). Each one stalls the host until the device drains; inside a per-token loop they turn a "
                 "step of milliseconds into seconds.";
      f.location = "phase forward";
      f.evidence = {{"syncs_this_step", ctx.tap.sync_points}, {"threshold", threshold}};
      ctx.report(f);
    }
  }
  void on_run_end(ProbeContext& ctx) override { ctx.table("syncs", {{"per_step", per_step_}}); }

 private:
  std::vector<int> per_step_;
  bool warned_ = false;
};

// Peak memory (device allocator on GPU, max RSS on CPU) and growth per step.
// Bytes in use now: the CUDA caching allocator's allocated bytes on a GPU, the
// C heap's in-use bytes (malloc arena + mmapped chunks) on the CPU — live data,
// unlike the peak resident size, which never falls and hides a slow leak.
double bytes_in_use(const at::Device& d) {
#ifdef NSA_WITH_FINITE_SCAN
  if (d.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index());
    return double(stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current);
  }
#endif
  (void)d;
  struct mallinfo2 mi = mallinfo2();
  return double(mi.uordblks) + double(mi.hblkhd);
}

class MemoryProbe : public Probe {
 public:
  void on_step_end(ProbeContext& ctx) override {
    double bytes = 0;
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) bytes = double(ru.ru_maxrss) * 1024.0;
    peak_.push_back(bytes);
    in_use_.push_back(bytes_in_use(ctx.device));
    ctx.events.emit(protocol::ev::metric, {{"name", "peak_mem_bytes"}, {"value", bytes}, {"step", ctx.step}});
    ctx.events.emit(protocol::ev::metric, {{"name", "mem_in_use_bytes"}, {"value", in_use_.back()}, {"step", ctx.step}});
  }
  void on_run_end(ProbeContext& ctx) override {
    if (auto g = steady_growth(in_use_)) {
      Finding f;
      f.code = std::string(reason::memory_growth);
      f.severity = Severity::blocking;
      f.title = "memory in use grows by " + fmt_double(g->bytes_per_step / 1e6) + " MB every step (" +
                std::to_string(g->steps) + " steps in a row)";
      f.detail = "After the warm-up step the bytes in use rose at every step, by " +
                 fmt_double(g->bytes_per_step / 1e6) + " MB a step (" + fmt_double(g->total_bytes / 1e6) +
                 " MB in all) — a leak: something keeps a tensor, a graph or a cache alive from one step to the "
                 "next. A run of N steps will need N times that.";
      f.location = ctx.device.is_cuda() ? "CUDA allocator (allocated bytes)" : "host heap (bytes in use)";
      f.evidence = {{"in_use_bytes_per_step", in_use_}, {"bytes_per_step", g->bytes_per_step},
                    {"peak_bytes_per_step", peak_}};
      ctx.report(f);
    }
    ctx.table("memory", {{"peak_bytes_per_step", peak_}, {"in_use_bytes_per_step", in_use_}, {"median", median(peak_)}});
  }

 private:
  std::vector<double> peak_, in_use_;
};

}  // namespace

std::unique_ptr<Probe> make_timing_probe(const ProbeSpec&) { return std::make_unique<TimingProbe>(); }
std::unique_ptr<Probe> make_syncs_probe(const ProbeSpec&) { return std::make_unique<SyncsProbe>(); }
std::unique_ptr<Probe> make_memory_probe(const ProbeSpec&) { return std::make_unique<MemoryProbe>(); }

}  // namespace harness
