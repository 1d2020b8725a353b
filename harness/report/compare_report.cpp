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
  if (!c.noise.empty()) {
    // The noise each step-time difference was judged against, counted or not.
    s += "\n## Step time against each cell's noise\n\n"
         "| Cell | A median ± spread | B median ± spread | Difference | Threshold | Beyond noise |\n"
         "|---|---|---|---|---|---|\n";
    for (const auto& n : c.noise)
      s += fmt::format("| {} | {:.2f} ± {:.2f} ms ({} steps) | {:.2f} ± {:.2f} ms ({} steps) | {:+.2f} ms | {:.2f} ms | {} |\n",
                       table_cell(code(n.cell)), n.a.median_ms, n.a.spread_ms, n.a.steps, n.b.median_ms, n.b.spread_ms,
                       n.b.steps, n.b.median_ms - n.a.median_ms, n.threshold_ms, n.beyond_noise ? "yes" : "no");
  }
  s += "\n## Rule\n\n"
       "An outcome change from pass to any failure is a regression, from a failure to pass a fix. "
       "Step time compares each cell's median warm step (the noise its run recorded: median and robust "
       "spread, 1.4826·MAD, of the steps after the first, without fp16-skipped steps); a change counts when "
       "the medians differ by more than max(10% of A's median, 3 × the larger of the two cells' spreads). "
       "A slowdown that counts is a regression; one inside the noise is not.\n";
  return s;
}

}  // namespace harness
