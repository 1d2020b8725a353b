// Grad coverage (parameters that never get a non-zero gradient) and learning
// sanity (the loss falls).
#include <cmath>
#include <set>

#include "harness/core/stats.h"
#include "harness/probes/probes.h"

namespace harness {
namespace {

class GradCoverageProbe : public Probe {
 public:
  void on_step_end(ProbeContext& ctx) override {
    if (ctx.stats.skipped) return;
    for (auto& [name, p] : ctx.model.parameters()) {
      if (alive_.count(name)) continue;
      if (p.grad().defined() && at::ne(p.grad(), 0).any().item<bool>()) alive_.insert(name);
    }
    steps_ += 1;
  }
  void on_run_end(ProbeContext& ctx) override {
    if (steps_ == 0) return;
    std::vector<std::string> dead;
    for (auto& [name, p] : ctx.model.parameters())
      if (!alive_.count(name)) dead.push_back(name);
    ctx.table("grad_coverage", {{"parameters", ctx.model.parameters().size()}, {"dead", dead}, {"steps", steps_}});
    if (dead.empty()) return;
    Finding f;
    f.code = std::string(reason::dead_params);
    f.severity = Severity::blocking;
    f.title = std::to_string(dead.size()) + " parameter(s) never received a gradient";
    std::string list;
    for (size_t i = 0; i < dead.size() && i < 12; ++i) list += (i ? ", " : "") + dead[i];
    f.detail = "Over " + std::to_string(steps_) + " step(s) these parameters never got a non-zero gradient, so they never "
               "train: " + list + (dead.size() > 12 ? ", …" : "") + ". Their output is cut from autograd somewhere "
               "between them and the loss.";
    f.location = dead.front();
    f.evidence = {{"dead", dead}};
    ctx.report(f);
  }

 private:
  std::set<std::string> alive_;
  int steps_ = 0;
};

class LearningProbe : public Probe {
 public:
  void on_step_end(ProbeContext& ctx) override { losses_.push_back(ctx.stats.loss); }
  void on_run_end(ProbeContext& ctx) override {
    const size_t n = losses_.size();
    if (n < 4) return;
    for (double l : losses_)
      if (!std::isfinite(l)) return;  // the finite probe owns that story
    // The run's trend, not its ends: at batch 1 one step's loss can jump by
    // 25 % (a hard batch), and comparing the first two steps with the last two
    // let such a step decide the verdict. Falling means the Theil–Sen line
    // drops by ≥ 2 % of where it starts over the run.
    const Trend tr = theil_sen(losses_);
    const double start = tr.at(0), end = tr.at(double(n - 1));
    ctx.table("learning", {{"start", start}, {"end", end}, {"slope_per_step", tr.slope}, {"spread", tr.spread},
                           {"losses", losses_}});
    if (end < start - 0.02 * start) return;
    Finding f;
    f.code = std::string(reason::loss_not_falling);
    f.severity = ctx.spec.gates.require_loss_falls ? Severity::blocking : Severity::warning;
    f.title = "loss did not fall: " + fmt_double(start) + " → " + fmt_double(end) + " (trend over " +
              std::to_string(n) + " steps)";
    f.detail = "Theil–Sen trend of the " + std::to_string(n) + " step losses: " + fmt_double(tr.slope) +
               " per step, from " + fmt_double(start) + " to " + fmt_double(end) + " (falling needs ≥ 2 % of the start); "
               "the losses scatter ±" + fmt_double(tr.spread) + " (1.4826·MAD) around that line.";
    f.evidence = {{"losses", losses_}, {"slope_per_step", tr.slope}, {"spread", tr.spread}};
    ctx.report(f);
  }

 private:
  std::vector<double> losses_;
};

}  // namespace

std::unique_ptr<Probe> make_grad_coverage_probe(const ProbeSpec&) { return std::make_unique<GradCoverageProbe>(); }
std::unique_ptr<Probe> make_learning_probe(const ProbeSpec&) { return std::make_unique<LearningProbe>(); }

}  // namespace harness
