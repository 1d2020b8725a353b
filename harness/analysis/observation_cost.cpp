#include "harness/analysis/observation_cost.h"

#include <algorithm>

#include "harness/analysis/stats.h"

namespace harness {
namespace {

constexpr const char* kAxis = "probes";

std::optional<std::string> probes_value(const CellResult& c) {
  for (const auto& [k, v] : c.axes)
    if (k == kAxis) return v;
  return std::nullopt;
}

AxisValues without_probes(const AxisValues& axes) {
  AxisValues out;
  for (const auto& kv : axes)
    if (kv.first != kAxis) out.push_back(kv);
  return out;
}

bool timed_pass(const CellResult& c) { return c.outcome == Outcome::pass && c.metrics.step_ms_median.has_value(); }

}  // namespace

std::vector<ObservationCost> observation_costs(const std::vector<CellResult>& cells) {
  std::vector<ObservationCost> out;
  for (const auto& observed : cells) {
    // Every observed variant (all probes, or a subset such as "cupti") against the bare cell.
    const auto observed_probes = probes_value(observed);
    if (!observed_probes || *observed_probes == "none" || !timed_pass(observed)) continue;
    const AxisValues rest = without_probes(observed.axes);
    auto bare = std::find_if(cells.begin(), cells.end(), [&](const CellResult& c) {
      return probes_value(c) == "none" && without_probes(c.axes) == rest;
    });
    if (bare == cells.end() || !timed_pass(*bare)) continue;
    ObservationCost oc;
    oc.observed_cell = observed.id;
    oc.bare_cell = bare->id;
    oc.observed_step_ms = *observed.metrics.step_ms_median;
    oc.observed_probe_ms = observed.metrics.probe_ms_median.value_or(0.0);
    // The bare cell's probe_ms is the loop's own bookkeeping (a device sync):
    // it is paid with or without probes, so it counts on both sides.
    oc.bare_ms = *bare->metrics.step_ms_median + bare->metrics.probe_ms_median.value_or(0.0);
    if (oc.bare_ms <= 0) continue;
    oc.cost = (oc.observed_step_ms + oc.observed_probe_ms) / oc.bare_ms - 1.0;
    std::vector<double> timed_steps;  // the first step is warm-up, as in step_ms_median
    for (size_t i = 1; i < bare->steps.size(); ++i) timed_steps.push_back(bare->steps[i].step_ms);
    const double mid = median(timed_steps);
    if (timed_steps.size() >= 3 && mid > 0) oc.bare_noise = mad_spread(timed_steps) / mid;
    out.push_back(oc);
  }
  return out;
}

}  // namespace harness
