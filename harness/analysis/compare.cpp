#include "harness/analysis/compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/core/stats.h"

namespace harness {

namespace {
constexpr double kMinRelativeChange = 0.10;  // 10% of A's median
constexpr double kSpreads = 3.0;             // × the larger robust spread

std::string outcome_text(const CellResult& c) {
  std::string s(to_string(c.outcome));
  if (c.reason) s += " (" + *c.reason + ")";
  return s;
}

const CellResult* find_cell(const RunResult& r, const std::string& id) {
  for (auto& c : r.cells)
    if (c.id == id) return &c;
  return nullptr;
}

std::string scenario_name(const RunResult& r) {
  return r.scenario.is_object() ? r.scenario.value("name", "") : "";
}
}  // namespace

std::string_view to_string(ChangeKind k) {
  switch (k) {
    case ChangeKind::regression: return "regression";
    case ChangeKind::fix: return "fix";
    case ChangeKind::changed: return "changed";
    case ChangeKind::new_cell: return "new";
    case ChangeKind::removed_cell: return "removed";
    case ChangeKind::slower: return "slower";
    case ChangeKind::faster: return "faster";
  }
  return "changed";
}

bool Comparison::has_regression() const {
  return std::any_of(changes.begin(), changes.end(), [](const CellChange& c) {
    return c.kind == ChangeKind::regression || c.kind == ChangeKind::slower;
  });
}

std::optional<StepTimeStats> step_time_stats(const CellResult& cell) {
  // The cell's own record first: the noise its run measured is the noise its report showed.
  if (cell.step_noise && cell.step_noise->steps > 0)
    return StepTimeStats{cell.step_noise->median_ms, cell.step_noise->mad_ms,
                         static_cast<size_t>(cell.step_noise->steps)};
  std::vector<double> ms;
  for (auto& s : cell.steps)
    if (!s.skipped && std::isfinite(s.step_ms) && s.step_ms > 0) ms.push_back(s.step_ms);
  if (ms.size() > 2) ms.erase(ms.begin());
  if (ms.empty()) return std::nullopt;
  return StepTimeStats{median(ms), mad_spread(ms), ms.size()};
}

bool step_time_changed(const StepTimeStats& a, const StepTimeStats& b, double* threshold_ms) {
  double threshold = std::max(kMinRelativeChange * a.median_ms, kSpreads * std::max(a.spread_ms, b.spread_ms));
  if (threshold_ms) *threshold_ms = threshold;
  return std::fabs(b.median_ms - a.median_ms) > threshold;
}

Comparison compare(const RunResult& a, const RunResult& b) {
  Comparison out{scenario_name(a), scenario_name(b), {}};
  for (auto& cb : b.cells) {
    const CellResult* ca = find_cell(a, cb.id);
    if (!ca) {
      out.changes.push_back({cb.id, ChangeKind::new_cell, "", outcome_text(cb), "only in B"});
      continue;
    }
    const bool fail_a = is_failure(ca->outcome), fail_b = is_failure(cb.outcome);
    if (ca->outcome != cb.outcome || ca->reason != cb.reason) {
      ChangeKind k = ChangeKind::changed;
      if (ca->outcome == Outcome::pass && fail_b) k = ChangeKind::regression;
      else if (fail_a && cb.outcome == Outcome::pass) k = ChangeKind::fix;
      out.changes.push_back({cb.id, k, outcome_text(*ca), outcome_text(cb), ""});
    }
    auto sa = step_time_stats(*ca), sb = step_time_stats(cb);
    if (!sa || !sb) continue;
    double threshold = 0;
    const bool beyond = step_time_changed(*sa, *sb, &threshold);
    out.noise.push_back({cb.id, *sa, *sb, threshold, beyond});
    if (beyond) {
      double rel = 100.0 * (sb->median_ms - sa->median_ms) / sa->median_ms;
      out.changes.push_back({cb.id, sb->median_ms > sa->median_ms ? ChangeKind::slower : ChangeKind::faster,
                             fmt::format("{:.1f} ms", sa->median_ms), fmt::format("{:.1f} ms", sb->median_ms),
                             fmt::format("{:+.1f}% median step time (threshold {:.1f} ms; spreads {:.1f} / {:.1f} ms)",
                                         rel, threshold, sa->spread_ms, sb->spread_ms)});
    }
  }
  for (auto& ca : a.cells)
    if (!find_cell(b, ca.id))
      out.changes.push_back({ca.id, ChangeKind::removed_cell, outcome_text(ca), "", "only in A"});
  return out;
}

std::optional<std::string> different_scenarios(const RunResult& a, const RunResult& b) {
  auto hash = [](const RunResult& r) {
    return r.scenario.is_object() && r.scenario.contains("hash") && r.scenario["hash"].is_string()
               ? r.scenario["hash"].get<std::string>()
               : std::string();
  };
  const std::string ha = hash(a), hb = hash(b);
  if (ha.empty() || hb.empty() || ha == hb) return std::nullopt;
  return fmt::format("the runs are of different scenarios: A is '{}' (hash {}), B is '{}' (hash {})", scenario_name(a),
                     ha, scenario_name(b), hb);
}

int compare_exit_code(const Comparison& c) { return c.has_regression() ? 1 : 0; }

}  // namespace harness
