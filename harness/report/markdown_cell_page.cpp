#include "harness/report/markdown_cell_page.h"

#include <fmt/format.h>

#include "harness/analysis/judgement.h"
#include "harness/report/markdown_findings.h"
#include "harness/report/markdown_trace.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {
// The page lives two directories below the run directory (cells/<dir>/).
constexpr const char* kToRunDir = "../../";

// How the steps ran: replays of the captured step, or why every step ran
// eagerly (CUDA cells report it).
std::optional<std::string> graph_text(const CellResult& c) {
  if (!c.cuda_graph) return std::nullopt;
  const CudaGraphRecord& g = *c.cuda_graph;
  if (g.captured_at > 0)
    return fmt::format("captured at step {}, {} of {} steps replayed ({} watched from inside ran eagerly){}", g.captured_at,
                       g.replays, c.steps_completed, g.watched_steps,
                       g.off_reason.empty() ? "" : "; " + g.off_reason);
  return "off: " + (g.off_reason.empty() ? std::string("no step ran") : g.off_reason);
}

// The weights the steps read: 16-bit copies, or each cast per step and why.
std::optional<std::string> weight_copies_text(const CellResult& c) {
  if (!c.weight_copies) return std::nullopt;
  const WeightCopiesRecord& w = *c.weight_copies;
  if (w.tensors > 0) return fmt::format("on: 16-bit copies of {} weights, refreshed each step", w.tensors);
  return "off: " + (w.off_reason.empty() ? std::string("no copies") : w.off_reason);
}

std::string facts(const RunResult& run, const CellResult& c) {
  const Judgement j = judge(c);
  std::string s = fmt::format("# Cell {}\n\n", code(c.id));
  s += fmt::format("Run: {} ({}), decision **{}**.\n\n", md_link("report", std::string(kToRunDir) + "report.md"),
                   field_text(run.scenario, "name"), to_string(run.decision));
  s += "| Fact | Value |\n|---|---|\n";
  s += fmt::format("| Outcome | {}{} |\n", j.outcome, c.reason ? " (" + code(*c.reason) + ")" : "");
  for (auto& [axis, value] : c.axes) s += "| Axis " + table_cell(axis) + " | " + table_cell(code(value)) + " |\n";
  s += fmt::format("| Steps | {}/{} |\n", c.steps_completed, c.steps_planned);
  s += fmt::format("| First / last loss | {} / {} |\n", number_text(c.metrics.first_loss, 4), number_text(c.metrics.last_loss, 4));
  s += fmt::format("| tok/s (median) | {} |\n", number_text(c.metrics.tok_s, 1));
  s += fmt::format("| Step ms (median / max) | {} / {} |\n", number_text(c.metrics.step_ms_median, 1),
                   number_text(c.metrics.step_ms_max, 1));
  // Before each step and outside its time: near zero while the prefetcher keeps up.
  if (c.metrics.data_ms_median) s += fmt::format("| Data wait + copy ms (median) | {} |\n", number_text(c.metrics.data_ms_median, 2));
  if (c.metrics.peak_mem_bytes) s += fmt::format("| Peak memory (MB) | {:.1f} |\n", *c.metrics.peak_mem_bytes / 1e6);
  if (auto g = graph_text(c)) s += "| CUDA graph of the step | " + table_cell(*g) + " |\n";
  if (auto w = weight_copies_text(c)) s += "| Weight copies | " + table_cell(*w) + " |\n";
  s += fmt::format("| Wall time (s) | {:.1f} |\n", c.wall_s);
  if (c.exit_code) s += fmt::format("| Exit status | {} |\n", *c.exit_code);
  if (c.term_signal) s += fmt::format("| Signal | {} |\n", *c.term_signal);
  for (auto& [k, v] : c.flags) s += "| Flag " + table_cell(k) + " | " + table_cell(code(v)) + " |\n";
  for (auto& f : c.faults) s += "| Fault | " + table_cell(code(f)) + " |\n";
  if (c.malformed_event_lines) s += fmt::format("| Malformed event lines | {} |\n", c.malformed_event_lines);
  return s;
}

std::string finding_block(int n, const Finding& f) {
  std::string s = fmt::format("### {}. {} ({}, {})\n\n", n, f.title, code(f.code), to_string(f.severity));
  if (f.step) s += fmt::format("- Step: {}\n", *f.step);
  if (!f.location.empty()) s += "- Location: " + f.location + "\n";
  if (!f.detail.empty()) s += "\n" + f.detail + "\n";
  if (auto ev = render_evidence(f.evidence); !ev.empty()) s += "\n" + ev;
  return s;
}

std::string escalation_block(const CellResult& c) {
  std::string s = "## Crash re-runs\n\n| Attempt | Outcome | Reason | Kernel | Detail |\n|---|---|---|---|---|\n";
  for (auto& e : c.escalation)
    s += "| " + table_cell(e.attempt) + " | " + table_cell(e.outcome) + " | " + table_cell(e.reason.empty() ? "—" : e.reason) +
         " | " + table_cell(e.kernel.empty() ? "—" : code(e.kernel)) + " | " + table_cell(e.detail) + " |\n";
  return s;
}

std::string flight_block(const FlightRecord& f) {
  std::string s = fmt::format("## Flight recorder\n\n{} kernel launches seen; the last, oldest first:\n\n", f.launches);
  s += "| Kernel | Step | NVTX |\n|---|---|---|\n";
  for (auto& k : f.last)
    s += "| " + table_cell(code(k.kernel)) + " | " + std::to_string(k.step) + " | " + table_cell(k.nvtx) + " |\n";
  return s;
}

std::string files_block(const CellResult& c, const FileExists& exists) {
  std::string s = "## Files\n\n";
  if (c.artifacts.empty()) return s + "None recorded.\n";
  for (auto& a : c.artifacts)
    s += "- " + (exists(a) ? md_link(code(a), std::string(kToRunDir) + a) : code(a) + " (not kept)") + "\n";
  return s;
}
}  // namespace

std::string render_cell_page(const RunResult& run, const CellResult& c, const FileExists& exists) {
  std::string s = facts(run, c);
  if (!c.findings.empty()) {
    s += "\n## Findings\n";
    int n = 0;
    for (auto& f : c.findings) s += "\n" + finding_block(++n, f);
  }
  if (c.confirmation)
    s += fmt::format("\n## Confirmation re-run\n\nFirst run: {} ({}); re-run: {}; {}.\n", c.confirmation->first_title,
                     code(c.confirmation->first_reason),
                     c.confirmation->rerun_reason.empty() ? "pass" : code(c.confirmation->rerun_reason),
                     c.confirmation->repeated ? "it repeated" : "it did not repeat");
  if (auto trace = render_trace_section(c); !trace.empty()) s += "\n" + trace;
  if (!c.escalation.empty()) s += "\n" + escalation_block(c);
  if (c.flight_recorder && !c.flight_recorder->last.empty()) s += "\n" + flight_block(*c.flight_recorder);
  if (!c.repro_command.empty()) s += "\n## Reproduce\n\n```bash\n" + c.repro_command + "\n```\n";
  s += "\n" + files_block(c, exists);
  return s;
}

}  // namespace harness
