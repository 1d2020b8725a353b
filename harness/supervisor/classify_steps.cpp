#include "harness/supervisor/classify_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/core/stats.h"

namespace harness::supervisor {
namespace {
using nlohmann::json;

// Numbers in events may be non-finite, written as "nan"/"inf" strings or null.
double number(const json& j, double fallback) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "nan" || s == "NaN") return std::nan("");
    if (s == "inf" || s == "Infinity") return INFINITY;
    if (s == "-inf" || s == "-Infinity") return -INFINITY;
  }
  if (j.is_null()) return std::nan("");
  return fallback;
}

double field(const json& e, const char* key, double fallback) {
  auto it = e.find(key);
  return it == e.end() ? fallback : number(*it, fallback);
}

// Indices of the steps that count for timing: all but the warm-up step and
// the step that captured the CUDA graph (it also ran a warm-up forward and
// backward and instantiated the graph: set-up, not a step's speed).
std::vector<size_t> timed(const std::vector<StepRecord>& steps) {
  std::vector<size_t> idx;
  for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i)
    if (steps[i].exec != StepExec::capture) idx.push_back(i);
  return idx;
}

// The first run of kGrowthSteps consecutive steps each ≥ kGrowthRatio × the one before.
std::optional<std::pair<size_t, size_t>> growth_run(const std::vector<StepRecord>& steps) {
  size_t run = 0;
  for (size_t i = 1; i < steps.size(); ++i) {
    bool grew = steps[i - 1].step_ms > 0 && steps[i].step_ms >= kGrowthRatio * steps[i - 1].step_ms;
    run = grew ? run + 1 : 0;
    if (run >= static_cast<size_t>(kGrowthSteps)) {
      size_t end = i;
      while (end + 1 < steps.size() && steps[end + 1].step_ms >= kGrowthRatio * steps[end].step_ms) ++end;
      return std::make_pair(i - run, end);
    }
  }
  return std::nullopt;
}
}  // namespace

std::vector<StepRecord> steps_from_events(const std::vector<json>& events) {
  std::vector<StepRecord> out;
  for (const auto& e : events) {
    if (e.value("ev", "") != "step_end") continue;
    StepRecord s;
    s.step = e.value("step", static_cast<int>(out.size()));
    s.loss = field(e, "loss", std::nan(""));
    s.step_ms = field(e, "step_ms", 0.0);
    s.tok_s = field(e, "tok_s", 0.0);
    s.skipped = e.value("skipped", false);
    s.host_syncs = static_cast<int>(field(e, "host_syncs", 0.0));
    if (e.contains("data_ms")) s.data_ms = field(e, "data_ms", std::nan(""));
    if (e.contains("observed") && e.at("observed").is_boolean()) s.observed = e.at("observed").get<bool>();
    if (e.contains("exec") && e.at("exec").is_string()) s.exec = e.at("exec").get<StepExec>();
    out.push_back(s);
  }
  // probe_ms arrives as a metric after its step's step_end (the hooks run then).
  for (const auto& e : events) {
    if (e.value("ev", "") != "metric" || e.value("name", "") != "probe_ms") continue;
    const int step = e.value("step", -1);
    for (auto& s : out)
      if (s.step == step) s.probe_ms = field(e, "value", 0.0);
  }
  return out;
}

CellMetrics metrics_from(const std::vector<StepRecord>& steps, const std::vector<json>& events) {
  CellMetrics m;
  std::vector<double> tok, ms, probe, data;
  for (size_t i : timed(steps)) {
    tok.push_back(steps[i].tok_s);
    ms.push_back(steps[i].step_ms);
    if (steps[i].probe_ms > 0) probe.push_back(steps[i].probe_ms);
    if (steps[i].data_ms && std::isfinite(*steps[i].data_ms)) data.push_back(*steps[i].data_ms);
  }
  if (!probe.empty()) m.probe_ms_median = median(probe);
  if (!data.empty()) m.data_ms_median = median(data);
  if (!ms.empty()) {
    m.tok_s = median(tok);
    m.step_ms_median = median(ms);
    m.step_ms_max = *std::max_element(ms.begin(), ms.end());
    m.first_loss = steps.front().loss;
    m.last_loss = steps.back().loss;
  }
  for (const auto& e : events) {
    if (e.value("ev", "") != "metric" || e.value("name", "") != "peak_mem_bytes") continue;
    double v = field(e, "value", std::nan(""));
    if (std::isfinite(v) && (!m.peak_mem_bytes || v > *m.peak_mem_bytes)) m.peak_mem_bytes = v;
  }
  return m;
}

std::optional<StepNoise> step_noise(const std::vector<StepRecord>& steps) {
  std::vector<double> ms;
  for (size_t i : timed(steps))
    if (std::isfinite(steps[i].step_ms) && steps[i].step_ms > 0) ms.push_back(steps[i].step_ms);
  if (ms.empty()) return std::nullopt;
  return StepNoise{median(ms), mad_spread(ms), static_cast<int>(ms.size())};
}

std::optional<Finding> find_slow_step(const std::vector<StepRecord>& steps, const WatchdogSpec& watchdog,
                                      std::optional<double> max_step_ms) {
  const std::vector<size_t> idx = timed(steps);
  struct Slow {
    size_t i;
    double median_others;
  };
  std::vector<Slow> slow;
  for (size_t i : idx) {
    std::vector<double> others;
    for (size_t j : idx)
      if (j != i) others.push_back(steps[j].step_ms);
    double med = median(others);
    // A relative outlier must also be absolutely slow and far outside the
    // other steps' own spread: on a shared CPU a 100 ms step can take 600 ms
    // when another process runs, and such scheduling noise is not a diagnosis.
    // (The max_step_ms gate is judged once, in the analysis, on the median.)
    const double spread = others.size() >= 3 ? mad_spread(others) : 0.0;
    bool over_factor = others.size() >= 2 && steps[i].step_ms > watchdog.slow_step_factor * med &&
                       steps[i].step_ms - med > std::max(kMinSlowExcessMs, kSlowNoiseMultiple * spread);
    if (over_factor) slow.push_back({i, med});
  }
  const auto noise = step_noise(steps);
  const bool over_gate = max_step_ms && noise && median_over_limit(*noise, *max_step_ms);
  if (over_gate && slow.empty())
    for (size_t i : idx) {
      std::vector<double> others;
      for (size_t j : idx)
        if (j != i) others.push_back(steps[j].step_ms);
      slow.push_back({i, median(others)});
    }
  if (slow.empty()) return std::nullopt;

  // The slowest step speaks for the others.
  const Slow worst = *std::max_element(slow.begin(), slow.end(), [&](const Slow& a, const Slow& b) {
    return steps[a.i].step_ms < steps[b.i].step_ms;
  });
  const StepRecord& s = steps[worst.i];
  std::vector<double> other_syncs;
  for (size_t j : idx)
    if (j != worst.i) other_syncs.push_back(steps[j].host_syncs);
  double med_syncs = other_syncs.empty() ? 0.0 : median(other_syncs);

  Finding f;
  f.severity = Severity::blocking;
  f.step = s.step;
  json slow_steps = json::array();
  for (const auto& x : slow) slow_steps.push_back({{"step", steps[x.i].step}, {"step_ms", steps[x.i].step_ms}});
  f.evidence = {{"step_ms", s.step_ms},
                {"median_others_ms", std::isnan(worst.median_others) ? json(nullptr) : json(worst.median_others)},
                {"slow_step_factor", watchdog.slow_step_factor},
                {"host_syncs", s.host_syncs},
                {"median_host_syncs_others", med_syncs},
                {"slow_steps", slow_steps}};
  std::string base = std::isnan(worst.median_others)
                         ? fmt::format("step {} took {:.1f} ms", s.step, s.step_ms)
                         : fmt::format("step {} took {:.1f} ms, {:.1f}× the median of the other steps ({:.1f} ms)",
                                       s.step, s.step_ms, s.step_ms / worst.median_others, worst.median_others);

  if (over_gate)
    base += fmt::format("; the median step, {:.1f} ms ± {:.1f}, is over the {} ms gate", noise->median_ms, noise->mad_ms,
                        *max_step_ms);

  if (s.host_syncs >= kHostSyncsHigh && s.host_syncs >= kHostSyncsRatio * med_syncs) {
    f.code = std::string(reason::slow_host_syncs);
    f.title = fmt::format("step {} slow with {} host syncs", s.step, s.host_syncs);
    f.detail = base + fmt::format("; it made {} host–device synchronisations against a median of {} in the "
                                  "other steps: the step is bound by host syncs, not compute.",
                                  s.host_syncs, med_syncs);
  } else if (s.host_syncs >= kHostSyncsHigh && med_syncs >= kHostSyncsHigh) {
    // Every step is slow and every step is full of syncs (the seeds' "hang"): no outlier
    // exists, but the syncs are still the explanation the run shows.
    f.code = std::string(reason::slow_host_syncs);
    f.title = fmt::format("steps slow with ~{} host syncs each", s.host_syncs);
    f.detail = base + fmt::format("; every step makes about {} host–device synchronisations (median {}): the run "
                                  "progresses, but is bound by host syncs, not compute.",
                                  s.host_syncs, med_syncs);
  } else if (auto g = growth_run(steps)) {
    f.code = std::string(reason::slow_step_growth);
    f.title = fmt::format("step time grows step over step (steps {}–{})", steps[g->first].step, steps[g->second].step);
    json growth = json::array();
    for (size_t i = g->first; i <= g->second; ++i) growth.push_back(steps[i].step_ms);
    f.evidence["growth_ms"] = growth;
    f.detail = base + fmt::format("; step times grow by ≥ {}× per step from step {} to step {}: cost that "
                                  "accumulates across steps (a cache, a graph or a buffer that keeps growing).",
                                  kGrowthRatio, steps[g->first].step, steps[g->second].step);
  } else {
    f.code = std::string(reason::slow_step);
    f.title = fmt::format("slow step {}", s.step);
    f.detail = base + "; no host-sync or growth pattern explains it.";
  }
  return f;
}

}  // namespace harness::supervisor
