// Grad coverage (parameters that never get a non-zero gradient) and learning
// sanity (the loss falls).
#include <cmath>
#include <set>

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
    double first = (losses_[0] + losses_[1]) / 2, last = (losses_[n - 1] + losses_[n - 2]) / 2;
    if (!std::isfinite(first) || !std::isfinite(last)) return;  // the finite probe owns that story
    ctx.table("learning", {{"first", first}, {"last", last}, {"losses", losses_}});
    if (last < first - 0.02 * first) return;
    Finding f;
    f.code = std::string(reason::loss_not_falling);
    f.severity = ctx.spec.gates.require_loss_falls ? Severity::blocking : Severity::warning;
    f.title = "loss did not fall: " + fmt_double(first) + " → " + fmt_double(last);
    f.detail = "Mean of the first two steps " + fmt_double(first) + ", of the last two " + fmt_double(last) + ".";
    f.evidence = {{"losses", losses_}};
    ctx.report(f);
  }

 private:
  std::vector<double> losses_;
};

}  // namespace

std::unique_ptr<Probe> make_grad_coverage_probe(const ProbeSpec&) { return std::make_unique<GradCoverageProbe>(); }
std::unique_ptr<Probe> make_learning_probe(const ProbeSpec&) { return std::make_unique<LearningProbe>(); }

}  // namespace harness
