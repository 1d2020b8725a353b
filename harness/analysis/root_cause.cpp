#include "harness/analysis/root_cause.h"

#include <algorithm>
#include <climits>
#include <utility>

#include <fmt/format.h>

#include "harness/analysis/axis_settings.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/verdict.h"

namespace harness {

namespace {

// Warnings known to lead to a failure of this reason in the same cell.
// adamw_eps_underflow: eps = 1e-8 is 0 in fp16, so an update divides by
// sqrt(v) = 0 the first time a gradient entry is 0 (DESIGN §7, the seeds' NaN).
constexpr std::pair<const char*, const char*> kLeadsTo[] = {
    {"adamw_eps_underflow", "non_finite"},
    {"host_syncs", "slow_host_syncs"},
};

bool leads_to(const std::string& warning, const std::string& failure) {
  return std::any_of(std::begin(kLeadsTo), std::end(kLeadsTo),
                     [&](auto& p) { return warning == p.first && failure == p.second; });
}

bool same_finding(const Finding& a, const Finding& b) {
  return a.code == b.code && a.title == b.title && a.step == b.step && a.location == b.location;
}

// A failure's grouping key ignores the title's numbers only through the code,
// step and location: three cells stalled in the same phase at the same step are one cause.
bool same_cause(const Finding& a, const Finding& b) {
  return a.code == b.code && a.step == b.step && a.location == b.location;
}

void add(std::vector<FindingGroup>& groups, const Finding& f, const std::string& cell) {
  auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return same_finding(g.finding, f); });
  if (it == groups.end()) groups.push_back({f, {cell}});
  else if (std::find(it->cells.begin(), it->cells.end(), cell) == it->cells.end()) it->cells.push_back(cell);
}

Finding bare_cause(const CellResult& c, const Judgement& j) {
  Finding f;
  f.code = j.reason;
  f.severity = Severity::blocking;
  f.title = j.outcome + " without a recorded finding";
  if (c.term_signal) f.detail = fmt::format("Killed by signal {}.", *c.term_signal);
  else if (c.exit_code) f.detail = fmt::format("Exit status {}.", *c.exit_code);
  return f;
}

std::string workaround_text(const Workaround& w) {
  std::string s = "`" + w.failing_cell + "` passes with ";
  for (size_t i = 0; i < w.settings.size(); ++i)
    s += (i ? " and " : "") + describe_setting(w.settings[i].first, w.settings[i].second);
  return s;
}

// The rest of a group's cells' findings: the precursor apart, blocking first.
void collect_consequences(FailureGroup& g, const std::vector<const CellResult*>& cells) {
  std::vector<FindingGroup> blocking, warnings;
  for (auto* c : cells)
    for (auto& f : c->findings) {
      if (same_cause(f, g.cause.finding) && f.severity == Severity::blocking) continue;
      if (f.severity == Severity::warning && leads_to(f.code, g.reason)) {
        if (!g.precursor) g.precursor = FindingGroup{f, {}};
        if (same_finding(g.precursor->finding, f)) g.precursor->cells.push_back(c->id);
        continue;
      }
      if (f.severity == Severity::blocking) add(blocking, f, c->id);
      else if (f.severity == Severity::warning) add(warnings, f, c->id);
    }
  g.consequences = std::move(blocking);
  g.consequences.insert(g.consequences.end(), warnings.begin(), warnings.end());
}

bool names_any(const Attribution& a, const std::vector<std::string>& ids) {
  return std::any_of(a.cells.begin(), a.cells.end(),
                     [&](auto& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); });
}

// True when `a` should come before `b` (the order in root_cause.h).
bool ranks_before(const FailureGroup& a, const FailureGroup& b) {
  if (a.wrong_answer != b.wrong_answer) return a.wrong_answer;
  if (a.worked_around != b.worked_around) return !a.worked_around;
  if (a.cause.cells.size() != b.cause.cells.size()) return a.cause.cells.size() > b.cause.cells.size();
  return a.cause.finding.step.value_or(INT_MAX) < b.cause.finding.step.value_or(INT_MAX);
}

}  // namespace

Diagnosis diagnose(const RunResult& run) {
  Diagnosis d;
  std::vector<std::vector<const CellResult*>> members;
  std::vector<std::string> failed;
  for (auto& c : run.cells) {
    const Judgement j = judge(c);
    if (j.kind != Judgement::Kind::fail) continue;
    failed.push_back(c.id);
    const Finding cause = j.deciding ? *j.deciding : bare_cause(c, j);
    auto it = std::find_if(d.failures.begin(), d.failures.end(),
                           [&](auto& g) { return g.reason == j.reason && same_cause(g.cause.finding, cause); });
    if (it == d.failures.end()) {
      d.failures.push_back(FailureGroup{j.outcome, j.reason, {cause, {}}, {}, {}, {}, {}, {}, false, true});
      members.emplace_back();
      it = d.failures.end() - 1;
    }
    auto& m = members[static_cast<size_t>(it - d.failures.begin())];
    it->cause.cells.push_back(c.id);
    m.push_back(&c);
    it->wrong_answer = it->wrong_answer || is_wrong_answer(j.reason);
    if (auto w = find_workaround(c, run.cells)) it->workarounds.push_back(workaround_text(*w));
    for (auto& f : c.faults)
      if (std::find(it->faults.begin(), it->faults.end(), f) == it->faults.end()) it->faults.push_back(f);
  }
  for (size_t i = 0; i < d.failures.size(); ++i) {
    auto& g = d.failures[i];
    g.worked_around = g.workarounds.size() == g.cause.cells.size();
    collect_consequences(g, members[i]);
    for (auto& a : run.attributions)
      if (names_any(a, g.cause.cells)) g.attributions.push_back(a);
  }
  std::stable_sort(d.failures.begin(), d.failures.end(), ranks_before);
  for (auto& c : run.cells) {
    if (c.outcome == Outcome::skip || std::find(failed.begin(), failed.end(), c.id) != failed.end()) continue;
    for (auto& f : c.findings)
      if (f.severity == Severity::warning) add(d.other_warnings, f, c.id);
  }
  return d;
}

}  // namespace harness
