#include "harness/report/markdown_appendix.h"

#include <fmt/format.h>

#include "harness/report/markdown_findings.h"
#include "harness/report/markdown_ranks.h"
#include "harness/report/markdown_sections.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {

std::string attributions(const RunResult& r) {
  if (r.attributions.empty()) return "No single setting flip turns a failing cell into a passing one in this matrix.\n";
  std::string s;
  for (auto& a : r.attributions) {
    s += "- " + a.statement + ".\n";
    if (a.cells.empty()) continue;
    s += "  Cells:";
    for (size_t i = 0; i < a.cells.size(); ++i) s += (i ? ", " : " ") + cell_link(a.cells[i]);
    s += "\n";
  }
  return s;
}

std::string findings_index(const RunResult& r) {
  std::string rows;
  for (auto& c : r.cells) {
    if (c.outcome == Outcome::skip) continue;
    for (auto& f : c.findings) {
      if (f.severity == Severity::info) continue;
      rows += "| " + table_cell(cell_link(c.id)) + " | " + std::string(to_string(f.severity)) + " | " + code(f.code) +
              " | " + table_cell(f.title) + " | " + (f.step ? std::to_string(*f.step) : "—") + " | " +
              (f.location.empty() ? "—" : table_cell(f.location)) + " |\n";
    }
  }
  if (rows.empty()) return "No findings.\n";
  return "Each finding's evidence (stack, first non-finite record, event tail, kernels) is on its cell's page.\n\n"
         "| Cell | Severity | Code | Title | Step | Location |\n|---|---|---|---|---|---|\n" + rows;
}


}  // namespace

std::string render_appendix(const RunResult& r, const FileExists& exists) {
  std::string s = fmt::format("# Appendix — {}\n\nThe detail behind {}: every cell, finding, gate and file of this run.\n",
                              field_text(r.scenario, "name"), md_link("report.md", "report.md"));
  auto section = [&](const char* title, const std::string& body) { s += fmt::format("\n## {}\n\n{}", title, body); };
  section("Comparison Matrix", matrix_table(r, false));
  if (auto st = settings_section(r); !st.empty()) section("Settings", st);
  if (r.cells.size() > kInlineCellsOnTop) section("Ranks", render_ranks_section(r));
  section("What Decides the Outcome", attributions(r));
  section("Findings", findings_index(r));
  if (auto sk = skipped_cells(r, cell_link); !sk.empty()) section("Skipped Cells", sk);
  section("Acceptance Gates", gates_section(r));
  if (auto hooks = probe_hooks_section(r); !hooks.empty()) section("Time Outside the Step", hooks);
  if (auto rep = reproducibility_section(r, false); !rep.empty()) section("Reproducibility", rep);
  section("Reproduce", repro_section(r, false));
  section("Artifacts", artifacts_section(r, exists));
  section("Next Actions", actions_section(r, 0));
  return s;
}

}  // namespace harness
