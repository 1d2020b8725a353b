#include "harness/report/compare_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/report/text_format.h"

namespace harness {

namespace {
std::string kind_cell(ChangeKind k) {
  switch (k) {
    case ChangeKind::regression:
    case ChangeKind::slower: return "❌ " + std::string(to_string(k));
    case ChangeKind::fix:
    case ChangeKind::faster: return "✅ " + std::string(to_string(k));
    default: return std::string(to_string(k));
  }
}

std::string or_dash(const std::string& s) { return s.empty() ? "—" : table_cell(s); }
}  // namespace

std::string render_comparison(const Comparison& c, const std::string& label_a, const std::string& label_b) {
  auto regressions = std::count_if(c.changes.begin(), c.changes.end(), [](const CellChange& ch) {
    return ch.kind == ChangeKind::regression || ch.kind == ChangeKind::slower;
  });
  std::string name = !c.scenario_b.empty() ? c.scenario_b : c.scenario_a;
  std::string s = fmt::format("# Run Comparison - {}\n\n", name.empty() ? "n/a" : name);
  s += "**A**: " + code(label_a) + "  \n";
  s += "**B**: " + code(label_b) + "  \n";
  if (!c.scenario_a.empty() && c.scenario_a != c.scenario_b)
    s += fmt::format("**Note**: the runs are of different scenarios ({} vs {})  \n", code(c.scenario_a),
                     code(c.scenario_b));
  s += regressions ? fmt::format("**Result**: **{} regression{}** ❌\n", regressions, regressions == 1 ? "" : "s")
                   : std::string("**Result**: **no regression** ✅\n");
  s += "\n## Changes\n\n";
  if (c.changes.empty()) {
    s += "No outcome changes and no step-time changes beyond noise.\n";
  } else {
    s += "| Cell | Change | A | B | Detail |\n|---|---|---|---|---|\n";
    for (auto& ch : c.changes)
      s += "| " + table_cell(code(ch.cell)) + " | " + kind_cell(ch.kind) + " | " + or_dash(ch.before) + " | " +
           or_dash(ch.after) + " | " + or_dash(ch.detail) + " |\n";
  }
  s += "\n## Rule\n\n"
       "An outcome change from pass to any failure is a regression, from a failure to pass a fix. "
       "Step time compares the medians of the per-step times (without fp16-skipped steps and without the "
       "first, warm-up step when there are more than two); a change counts when the medians differ by more "
       "than max(10% of A's median, 3 × the larger robust spread, 1.4826·MAD). A slowdown that counts is a "
       "regression.\n";
  return s;
}

}  // namespace harness
