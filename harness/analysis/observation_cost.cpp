#include "harness/analysis/observation_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "harness/analysis/axis_pairs.h"
#include "harness/core/stats.h"

namespace harness {
namespace {

constexpr const char* kProbesAxis = "probes";

std::optional<std::string> probes_value(const CellResult& c) { return axis_value(c, kProbesAxis); }

bool timed_pass(const CellResult& c) { return c.outcome == Outcome::pass && c.metrics.step_ms_median.has_value(); }

// A step's cost split in its two parts, and the standard error of their sum.
struct StepCost {
  double step_ms = 0, probe_ms = 0;
  double se_ms = 0;
};

// Large-sample efficiency of the median: its standard error is about
// sqrt(pi / 2) σ / √n for normally distributed values.
constexpr double kMedianSeFactor = 1.2533141373155;

// The sampled probes (`every: N`, N > 1) that run at this step, by the rule
// of probe_due (harness/probes/probe.h): their `every` divides the step.
std::string sampled_at(const std::map<std::string, int>& sampled, int step) {
  std::string due;
  for (auto& [name, every] : sampled)
    if (every > 1 && step % every == 0) due += name + " ";
  return due;
}

// What an observed step costs on average, robustly: steps are grouped by how
// they ran (eager, or replayed from the CUDA graph) and by which sampled
// probes ran at them (a cheap checksum every 10 steps is not the deep set
// every 50), and each group's median weighted by how many steps it had. The
// few steps a deep probe samples cost more (its own work, an eager step
// where a probe needs one); a median over all steps would not see them, a
// mean would be swayed by one step a busy machine slowed. Warm-up and the capture step are not counted.
// se_ms: the estimate's standard error, each class's median's in quadrature
// by its weight; a class of fewer than three steps takes `fallback_rel` (a
// relative spread) as its own, two steps at least their own deviation.
StepCost amortized(const std::vector<const StepRecord*>& steps, const std::map<std::string, int>& sampled,
                   double fallback_rel) {
  std::map<std::pair<bool, std::string>, std::vector<const StepRecord*>> by_class;  // (replayed, sampled due)
  for (const StepRecord* s : steps)
    by_class[{s->exec == StepExec::replay, sampled_at(sampled, s->step)}].push_back(s);
  StepCost out;
  if (steps.empty()) return out;
  double var = 0;
  for (auto& [cls, group] : by_class) {
    std::vector<double> step_ms, probe_ms, total_ms;
    for (const StepRecord* s : group) {
      step_ms.push_back(s->step_ms), probe_ms.push_back(s->probe_ms);
      total_ms.push_back(s->step_ms + s->probe_ms);
    }
    const double w = double(group.size()) / double(steps.size());
    out.step_ms += w * median(step_ms);
    out.probe_ms += w * median(probe_ms);
    const double n = double(group.size());
    double sigma = group.size() >= 3 ? mad_spread(total_ms) : fallback_rel * median(total_ms);
    // Two steps have no robust spread, but their difference bounds it from
    // below (the sample deviation of two values): sampled steps that differ
    // (the first one pays for warming its probes) must not look certain.
    if (group.size() == 2) sigma = std::max(sigma, std::abs(total_ms[0] - total_ms[1]) / std::sqrt(2.0));
    const double se = kMedianSeFactor * sigma / std::sqrt(n);
    var += w * w * se * se;
  }
  out.se_ms = std::sqrt(var);
  return out;
}

double goal_for(const CellResult& observed) {
  return observed.sampled_probes.empty() ? kObservationCostGoal : kSampledObservationCostGoal;
}

std::vector<const StepRecord*> timed_steps(const CellResult& c) {
  std::vector<const StepRecord*> out;
  for (size_t i = 1; i < c.steps.size(); ++i)
    if (c.steps[i].exec != StepExec::capture) out.push_back(&c.steps[i]);
  return out;
}

}  // namespace

// `probes: alternate`: even steps observed, odd steps bare, in one process.
// The first step is warm-up and the step that captured the CUDA graph is
// set-up, as in step_ms_median. Each side is weighed as the all-vs-none pairs
// are (amortized): with sampled probes the rare observed step where they ran
// costs more, and a plain median would not count it.
std::optional<ObservationCost> alternating_cost(const CellResult& c) {
  std::vector<const StepRecord*> on, off;
  std::vector<double> off_step;
  for (size_t i = 1; i < c.steps.size(); ++i) {
    const StepRecord& s = c.steps[i];
    if (!s.observed || s.exec == StepExec::capture) continue;
    (*s.observed ? on : off).push_back(&s);
    if (!*s.observed) off_step.push_back(s.step_ms);
  }
  if (on.empty() || off.empty()) return std::nullopt;
  const double off_noise = relative_spread(off_step);
  const StepCost watched = amortized(on, c.sampled_probes, off_noise), bare = amortized(off, c.sampled_probes, off_noise);
  ObservationCost oc;
  oc.cell_id = c.id;
  oc.observed_cell = c.id + " (even steps)";
  oc.bare_cell = c.id + " (odd steps)";
  oc.observed_step_ms = watched.step_ms;
  oc.observed_probe_ms = watched.probe_ms;
  oc.bare_ms = bare.step_ms + bare.probe_ms;
  if (oc.bare_ms <= 0) return std::nullopt;
  oc.cost = (oc.observed_step_ms + oc.observed_probe_ms) / oc.bare_ms - 1.0;
  oc.bare_noise = off_noise;
  oc.estimate_noise = std::hypot(watched.se_ms, bare.se_ms) / oc.bare_ms;
  oc.goal = goal_for(c);
  return oc;
}

std::vector<ObservationCost> observation_costs(const std::vector<CellResult>& cells) {
  std::vector<ObservationCost> out;
  for (const auto& observed : cells) {
    if (probes_value(observed) == "alternate") {
      if (observed.outcome == Outcome::pass)
        if (auto oc = alternating_cost(observed)) out.push_back(*oc);
      continue;
    }
    // Every observed variant (all probes, or a subset such as "cupti") against the bare cell.
    const auto observed_probes = probes_value(observed);
    if (!observed_probes || *observed_probes == "none" || !timed_pass(observed)) continue;
    const CellResult* bare = partner_on(cells, observed, kProbesAxis, "none");
    if (!bare || !timed_pass(*bare)) continue;
    ObservationCost oc;
    oc.cell_id = observed.id;
    oc.observed_cell = observed.id;
    oc.bare_cell = bare->id;
    oc.bare_noise = relative_spread(warm_step_ms(*bare));
    const auto steps = timed_steps(observed);
    const StepCost on = steps.empty() ? StepCost{*observed.metrics.step_ms_median,
                                                 observed.metrics.probe_ms_median.value_or(0.0)}
                                      : amortized(steps, observed.sampled_probes, oc.bare_noise);
    oc.observed_step_ms = on.step_ms;
    oc.observed_probe_ms = on.probe_ms;
    // The bare cell's probe_ms is the loop's own bookkeeping (a device sync):
    // it is paid with or without probes, so it counts on both sides. Its steps
    // are weighed as the observed cell's are (its eager steps before the
    // capture count on both sides too).
    const auto bare_steps = timed_steps(*bare);
    const StepCost off = bare_steps.empty() ? StepCost{*bare->metrics.step_ms_median,
                                                       bare->metrics.probe_ms_median.value_or(0.0)}
                                            : amortized(bare_steps, bare->sampled_probes, oc.bare_noise);
    oc.bare_ms = off.step_ms + off.probe_ms;
    if (oc.bare_ms <= 0) continue;
    oc.cost = (oc.observed_step_ms + oc.observed_probe_ms) / oc.bare_ms - 1.0;
    // Unknown (0) unless both sides have per-step records to take it from.
    if (!steps.empty() && !bare_steps.empty()) oc.estimate_noise = std::hypot(on.se_ms, off.se_ms) / oc.bare_ms;
    oc.run_noise = run_to_run_spread(cells, *bare);
    oc.goal = goal_for(observed);
    out.push_back(oc);
  }
  return out;
}

double ObservationCost::noise() const {
  return std::hypot(std::hypot(bare_noise, estimate_noise), std::sqrt(2.0) * run_noise);
}

void to_json(nlohmann::json& j, const ObservationCost& c) {
  j = {{"cell", c.cell_id},
       {"observed_cell", c.observed_cell},
       {"bare_cell", c.bare_cell},
       {"observed_step_ms", c.observed_step_ms},
       {"observed_probe_ms", c.observed_probe_ms},
       {"bare_ms", c.bare_ms},
       {"cost", c.cost},
       {"bare_noise", c.bare_noise},
       {"estimate_noise", c.estimate_noise},
       {"run_noise", c.run_noise},
       {"goal", c.goal},
       {"met", c.cost <= c.goal}};
}

}  // namespace harness
