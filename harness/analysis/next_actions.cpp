#include "harness/analysis/next_actions.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/analysis/attribution.h"
#include "harness/analysis/axis_settings.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/summary.h"

namespace harness {

namespace {
struct ReasonUse {
  std::string code;
  std::vector<std::string> cells;
  const Finding* finding = nullptr;  // the first finding with this code, for its location
};

void note(std::vector<ReasonUse>& uses, const std::string& code, const CellResult& c, const Finding* f) {
  auto it = std::find_if(uses.begin(), uses.end(), [&](auto& u) { return u.code == code; });
  if (it == uses.end()) { uses.push_back({code, {}, f}); it = uses.end() - 1; }
  if (std::find(it->cells.begin(), it->cells.end(), c.id) == it->cells.end()) it->cells.push_back(c.id);
  if (!it->finding) it->finding = f;
}
}  // namespace

// The advice column of the reason table (harness/core/reason_table.h).
std::string_view action_for(std::string_view reason) {
  const ReasonInfo* r = find_reason(reason);
  return r ? r->advice : "read the finding's detail and evidence";
}

std::vector<std::string> next_actions(const RunResult& run) {
  // Blocking reasons first (they decide the outcome), then warnings, then skips.
  std::vector<ReasonUse> blocking, warnings, skips;
  for (auto& c : run.cells) {
    Judgement j = judge(c);
    if (j.kind == Judgement::Kind::fail) note(blocking, j.reason, c, j.deciding);
    if (j.kind == Judgement::Kind::skip) { note(skips, j.reason, c, j.deciding); continue; }
    for (auto& f : c.findings)
      if (f.severity == Severity::warning) note(warnings, f.code, c, &f);
  }
  std::vector<std::string> out;
  for (auto* uses : {&blocking, &warnings, &skips})
    for (auto& u : *uses) {
      std::string s = fmt::format("[{}] {}: {}", u.code, cell_list(u.cells, 3), action_for(u.code));
      if (u.finding && !u.finding->location.empty()) {
        s += fmt::format(" (at {}", u.finding->location);
        if (u.finding->step) s += fmt::format(", step {}", *u.finding->step);
        s += ")";
      }
      out.push_back(s + ".");
    }
  for (auto& a : attribute(run.cells)) {
    if (!is_workaround_axis(a.axis)) continue;
    // Only consistent evidence becomes a workaround: a bypass every pair agrees
    // on, or a clean partition of the axis's values.
    if (a.statement.find(" bypasses ") != std::string::npos)
      out.push_back(fmt::format("Until fixed, run with {} (workaround: {}).",
                                describe_setting(a.axis, a.passing_value), a.statement));
    else if (a.statement.find(" only with ") != std::string::npos ||
             a.statement.find(" only at ") != std::string::npos)
      out.push_back(fmt::format("Until fixed, avoid {} (workaround: {}).", describe_setting(a.axis, a.failing_value),
                                a.statement));
  }
  return out;
}

}  // namespace harness
