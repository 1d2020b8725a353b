// Timing, syncs and memory: the cheap probes that summarise what every step
// already records.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "harness/probes/probes.h"

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
  std::string name() const override { return "timing"; }
  void on_step_end(ProbeContext& ctx) override { (void)ctx; }
};

// Counts the model's reported host syncs per step; many per step is how a
// "hang" that is really a crawl shows itself.
class SyncsProbe : public Probe {
 public:
  std::string name() const override { return "syncs"; }
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
class MemoryProbe : public Probe {
 public:
  std::string name() const override { return "memory"; }
  void on_step_end(ProbeContext& ctx) override {
    double bytes = 0;
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) bytes = double(ru.ru_maxrss) * 1024.0;
    peak_.push_back(bytes);
    ctx.events.emit(protocol::ev::metric, {{"name", "peak_mem_bytes"}, {"value", bytes}, {"step", ctx.step}});
  }
  void on_run_end(ProbeContext& ctx) override {
    // Growth: the peak still rising over the second half of the run by > 20 %.
    if (peak_.size() >= 6) {
      double mid = peak_[peak_.size() / 2], end = peak_.back();
      if (mid > 0 && end > 1.2 * mid) {
        Finding f;
        f.code = std::string(reason::memory_growth);
        f.severity = Severity::warning;
        f.title = "peak memory still growing: " + fmt_double(mid / 1e6) + " MB → " + fmt_double(end / 1e6) + " MB";
        f.detail = "Peak memory kept rising in the second half of the run; state may be kept across steps.";
        f.evidence = {{"peak_bytes_per_step", peak_}};
        ctx.report(f);
      }
    }
    ctx.table("memory", {{"peak_bytes_per_step", peak_}, {"median", median(peak_)}});
  }

 private:
  std::vector<double> peak_;
};

}  // namespace

std::unique_ptr<Probe> make_timing_probe(const ProbeSpec&) { return std::make_unique<TimingProbe>(); }
std::unique_ptr<Probe> make_syncs_probe(const ProbeSpec&) { return std::make_unique<SyncsProbe>(); }
std::unique_ptr<Probe> make_memory_probe(const ProbeSpec&) { return std::make_unique<MemoryProbe>(); }

}  // namespace harness
