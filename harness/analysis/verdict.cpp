#include "harness/analysis/verdict.h"

#include <algorithm>

#include "harness/analysis/axis_settings.h"
#include "harness/analysis/gates.h"
#include "harness/analysis/judgement.h"

namespace harness {

bool is_wrong_answer(const std::string& reason) {
  return reason == reason::parity || reason == reason::causality || reason == reason::invariant;
}

std::optional<Workaround> find_workaround(const CellResult& failing, const std::vector<CellResult>& cells) {
  // A path or precision that computes the wrong attention is a bug to fix, not
  // a setting to avoid: another path passing does not make this one right.
  if (is_wrong_answer(judge(failing).reason)) return std::nullopt;
  for (auto& f : failing.findings)
    if (f.severity == Severity::blocking && is_wrong_answer(f.code)) return std::nullopt;
  std::optional<Workaround> best;
  for (auto& c : cells) {
    if (&c == &failing || c.axes.size() != failing.axes.size()) continue;
    if (judge(c).kind != Judgement::Kind::pass) continue;
    AxisValues diff;
    bool same_workload = true;
    for (auto& [axis, value] : failing.axes) {
      // The name captured by copy: clang before 16 cannot capture a structured binding.
      auto it = std::find_if(c.axes.begin(), c.axes.end(), [&, name = axis](auto& kv) { return kv.first == name; });
      if (it == c.axes.end()) { same_workload = false; break; }
      if (it->second == value) continue;
      if (!is_workaround_axis(axis)) { same_workload = false; break; }
      diff.emplace_back(axis, it->second);
    }
    if (!same_workload || diff.empty()) continue;
    if (!best || diff.size() < best->settings.size()) best = Workaround{failing.id, c.id, diff};
  }
  return best;
}

DecisionBasis explain_decision(const RunResult& run) {
  DecisionBasis b;
  for (auto& c : run.cells) {
    Judgement j = judge(c);
    if (j.kind == Judgement::Kind::skip) { b.skipped++; continue; }
    b.ran++;
    for (auto& f : c.findings)
      if (f.severity == Severity::warning &&
          std::find(b.warning_codes.begin(), b.warning_codes.end(), f.code) == b.warning_codes.end())
        b.warning_codes.push_back(f.code);
    for (auto& g : check_gates(c))
      if (!g.judged && std::find(b.warning_codes.begin(), b.warning_codes.end(), kGateNotJudged) == b.warning_codes.end())
        b.warning_codes.push_back(kGateNotJudged);
    if (j.kind != Judgement::Kind::fail) continue;
    b.failing.push_back(c.id);
    if (auto w = find_workaround(c, run.cells)) b.workarounds.push_back(*w);
    else b.no_workaround.push_back(c.id);
  }
  if (run.completion.end == RunEnd::cells_missing) b.missing = run.completion.not_run;
  if (!b.no_workaround.empty() || !b.missing.empty()) b.decision = Decision::no_go;
  else if (!b.failing.empty() || !b.warning_codes.empty() || b.ran == 0) b.decision = Decision::conditional_go;
  else b.decision = Decision::go;
  return b;
}

Decision decide(const RunResult& run) { return explain_decision(run).decision; }

}  // namespace harness
