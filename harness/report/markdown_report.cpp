#include "harness/report/markdown_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/analysis/judgement.h"
#include "harness/analysis/dense_baseline.h"
#include "harness/analysis/observation_cost.h"
#include "harness/core/atomic_file.h"
#include "harness/core/enum_names.h"
#include "harness/report/markdown_completion.h"
#include "harness/report/markdown_findings.h"
#include "harness/report/markdown_ranks.h"
#include "harness/report/report_writer.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {

constexpr EnumName<Decision> kDecisionIcons[] = {
    {Decision::go, "✅"}, {Decision::conditional_go, "⚠️"}, {Decision::no_go, "❌"}};
std::string decision_icon(Decision d) { return std::string(name_in(kDecisionIcons, d, "")); }

std::string outcome_cell(Outcome o) {
  if (o == Outcome::pass) return "✅ pass";
  if (o == Outcome::skip) return "⏭️ skip";
  return "❌ " + std::string(to_string(o));
}

std::string title_date(const RunResult& r) {
  if (r.started_at.size() >= 10) return r.started_at.substr(0, 10);
  std::string d = field_text(r.platform, "date");
  return d.size() >= 10 ? d.substr(0, 10) : d;
}

std::string header(const RunResult& r) {
  std::string name = field_text(r.scenario, "name");
  std::string s = fmt::format("# {} Test Engineer Report - {}\n\n", title_date(r), name);
  if (std::string banner = completion_banner(r); !banner.empty()) s += banner + "\n";
  s += "**Date**: " + (r.started_at.empty() ? field_text(r.platform, "date") : r.started_at) + "  \n";
  s += fmt::format("**Platform**: GPU {}, SM {}, driver {}, CUDA {}, libtorch {}  \n", field_text(r.platform, "gpu"),
                   field_text(r.platform, "sm"), field_text(r.platform, "driver"), field_text(r.platform, "cuda"),
                   field_text(r.platform, "libtorch"));
  s += fmt::format("**Revision**: git {}, scenario hash {}  \n", field_text(r.platform, "git"),
                   field_text(r.scenario, "hash"));
  s += "**Scenario**: " + code(name);
  if (std::string file = field_text(r.scenario, "file"); file != "n/a") s += " (" + file + ")";
  s += "  \n";
  if (!r.command_line.empty()) s += "**Command**: " + code(r.command_line) + "  \n";
  if (r.shard)
    s += fmt::format("**Shard**: {} of {} (slice {}/{}: {} of the matrix's {} cells)  \n", r.shard->index + 1,
                     r.shard->count, r.shard->index, r.shard->count, r.cells.size() + r.completion.not_run.size(),
                     r.shard->matrix_cells.size());
  if (!r.merged_from.empty()) {
    s += fmt::format("**Merged from**: {} shard(s):", r.merged_from.size());
    for (size_t i = 0; i < r.merged_from.size(); ++i)
      s += fmt::format("{} {} ({} cells)", i ? "," : "", code(r.merged_from[i].dir), r.merged_from[i].cells);
    s += "  \n";
  }
  if (run_is_complete(r))
    s += fmt::format("**Decision**: **{}** {}\n", to_string(r.decision), decision_icon(r.decision));
  else
    s += incomplete_decision_line(r, std::string(to_string(r.decision)));
  if (std::string d = field_text(r.scenario, "description"); d != "n/a") s += "\n> " + table_cell(d) + "\n";
  return s;
}

// "0 `GPU-aaa` (Fake A)" per GPU the cell was given; "—" for none.
std::string gpu_cell(const CellResult& c) {
  if (c.gpus.empty()) return "—";
  std::string s;
  for (auto& g : c.gpus)
    s += fmt::format("{}{} {} ({})", s.empty() ? "" : "; ", g.index, code(g.uuid), table_cell(g.name));
  return s;
}

std::string matrix(const RunResult& r) {
  bool expectations = false, gpus = false;
  for (auto& c : r.cells) expectations |= c.expect.has_value(), gpus |= !c.gpus.empty();
  // The GPU column only where the harness placed cells on GPUs: a CPU run's table stays as it was.
  std::string s = "| Cell | Outcome | Reason | Steps | Last loss | tok/s | Step ms (median) |";
  std::string rule = "|---|---|---|---|---|---|---|";
  if (gpus) s += " GPU |", rule += "---|";
  if (expectations) s += " Expected |", rule += "---|";
  s += "\n" + rule + "\n";
  for (auto& c : r.cells) {
    s += fmt::format("| {} | {} | {} | {}/{} | {} | {} | {} |", table_cell(code(c.id)), outcome_cell(c.outcome),
                     c.reason ? table_cell(*c.reason) : "—", c.steps_completed, c.steps_planned,
                     number_text(c.metrics.last_loss, 4), number_text(c.metrics.tok_s, 1),
                     number_text(c.metrics.step_ms_median, 1));
    if (gpus) s += " " + gpu_cell(c) + " |";
    if (expectations) s += !c.expect ? " — |" : c.expect_met.value_or(false) ? " ✅ met |" : " ❌ not met |";
    s += "\n";
  }
  // Missing from every shard: a row that can never read as a pass.
  if (r.completion.end == RunEnd::cells_missing)
    for (auto& id : r.completion.not_run)
      s += fmt::format("| {} | ❔ missing | in no shard | — | — | — | — |{}{}\n", table_cell(code(id)),
                       gpus ? " — |" : "", expectations ? " — |" : "");
  return s;
}

// Every setting that changed behaviour, per cell, and where it came from; the
// machine's load beside the timings. Empty when no cell carries any (then the
// comparison matrix says all there is).
std::string settings_section(const RunResult& r) {
  bool any = false;
  for (auto& c : r.cells) any |= !c.flags.empty() || !c.faults.empty();
  std::string s;
  if (any) {
    s += "Flags and faults as each cell ran them (scenario, matrix, include; *env* = from the environment, written "
         "into the repro):\n\n| Cell | Flags | Faults |\n|---|---|---|\n";
    for (auto& c : r.cells) {
      auto from_env = [&](const std::string& name) {
        return std::find(c.from_environment.begin(), c.from_environment.end(), name) != c.from_environment.end();
      };
      std::string flags, faults;
      for (auto& [k, v] : c.flags) flags += (flags.empty() ? "" : ", ") + code(k + "=" + v) + (from_env(k) ? " *env*" : "");
      for (auto& f : c.faults) faults += (faults.empty() ? "" : ", ") + code(f) + (from_env("NSA_FAULT=" + f) ? " *env*" : "");
      s += fmt::format("| {} | {} | {} |\n", table_cell(code(c.id)), flags.empty() ? "—" : flags, faults.empty() ? "—" : faults);
    }
  }
  double lo = INFINITY, hi = -INFINITY;
  int cpus = 0;
  for (auto& c : r.cells)
    if (c.load) lo = std::min({lo, c.load->start, c.load->end}), hi = std::max({hi, c.load->start, c.load->end}), cpus = c.load->cpus;
  if (std::isfinite(lo))
    s += fmt::format("{}Machine load while the cells ran: 1-minute load average {:.1f}–{:.1f} on {} CPUs; step times are "
                     "judged against each cell's own spread (median ± scaled MAD), and a finding that rests on time "
                     "alone is re-run once before it stands.\n", s.empty() ? "" : "\n", lo, hi, cpus);
  return s;
}

std::string attribution_section(const RunResult& r) {
  if (r.attributions.empty()) {
    for (auto& c : r.cells)
      if (judge(c).kind == Judgement::Kind::fail)
        return "No single setting flip turns a failing cell into a passing one in this matrix.\n";
    return "Nothing failed; there is nothing to attribute.\n";
  }
  std::string s;
  for (auto& a : r.attributions) {
    s += "- " + a.statement + ".\n";
    if (!a.cells.empty()) {
      s += "  Cells:";
      for (size_t i = 0; i < a.cells.size(); ++i) s += (i ? ", " : " ") + code(a.cells[i]);
      s += "\n";
    }
  }
  return s;
}

std::string gates_section(const RunResult& r) {
  if (r.gates.empty()) return "No acceptance gates were set.\n";
  std::string s = "| Gate | Cell | Required | Measured | Met |\n|---|---|---|---|---|\n";
  for (auto& g : r.gates)
    s += "| " + g.gate + " | " + table_cell(code(g.cell)) + " | " + table_cell(g.required) + " | " +
         table_cell(g.measured) + " | " + (g.met ? "✅" : !g.judged ? "⏸️ not judged" : "❌") + " |\n";
  return s;
}

// Only for matrices with the attention axis (nsa / dense); otherwise left out.
std::string dense_section(const RunResult& r) {
  const auto pairs = dense_comparisons(r.cells);
  if (pairs.empty()) return "";
  std::string s =
      "NSA's training throughput against dense causal attention (SDPA) with the same shapes, in this run, on this "
      "machine: median tok/s over the warm steps of each cell of a pair that differs only in `attention`.\n\n"
      "| NSA cell | NSA tok/s | Dense tok/s | NSA ÷ dense | Noise (±1σ) |\n|---|---|---|---|---|\n";
  for (const auto& d : pairs)
    s += fmt::format("| {} | {:.0f} | {:.0f} | {:.2f}× | {} |\n", table_cell(code(d.nsa_cell)), d.nsa_tok_s,
                     d.dense_tok_s, d.ratio, d.noise > 0 ? fmt::format("±{:.1f} %", d.noise * 100) : std::string("n/a"));
  return s;
}

constexpr size_t kProbeCostRows = 6;

// Only for matrices with the probes axis; otherwise the section is left out.
std::string observation_section(const RunResult& r) {
  auto costs = observation_costs(r.cells);
  if (costs.empty()) return "";
  std::string s = fmt::format(
      "What the probes cost per step (goal ≤ {:.0f} %): the median timed step with the probes on, plus the "
      "median time the probes spent outside it, against the same cell with every probe off (for "
      "`probes=alternate`, the same process's unobserved odd steps).\n\n"
      "| Observed cell | Step ms (probes on) | Probe ms outside the step | Step ms (probes off) | Cost | "
      "Noise (probes off, ±1σ) | Goal met |\n"
      "|---|---|---|---|---|---|---|\n",
      kObservationCostGoal * 100);
  bool within_noise = false;
  for (const auto& c : costs) {
    const bool unresolved = c.bare_noise > 0 && std::abs(c.cost) < 2 * c.bare_noise;
    within_noise = within_noise || unresolved;
    s += fmt::format("| {} | {:.1f} | {:.2f} | {:.1f} | {:+.1f} %{} | {} | {} |\n", table_cell(code(c.observed_cell)),
                     c.observed_step_ms, c.observed_probe_ms, c.bare_ms, c.cost * 100, unresolved ? " (within noise)" : "",
                     c.bare_noise > 0 ? fmt::format("±{:.1f} %", c.bare_noise * 100) : std::string("n/a"),
                     c.cost <= kObservationCostGoal ? "✅" : "❌");
  }
  if (within_noise)
    s += "\nA cost within twice the unobserved cell's step-to-step noise cannot be told from that noise: more steps or "
         "more rounds (another `steps` value) narrow it.\n";
  // Where the time outside the step goes, as the observed child measured it.
  for (const auto& c : costs) {
    for (const auto& cell : r.cells) {
      if (cell.id != c.cell_id) continue;
      if (cell.probe_costs.empty()) continue;
      s += fmt::format("\nStep-end hooks of {} (median ms per step, largest first):\n\n", code(c.observed_cell));
      s += render_table(nlohmann::json(cell.probe_costs), kProbeCostRows);
    }
  }
  return s;
}

std::string repro_section(const RunResult& r) {
  std::string body;
  for (auto& c : r.cells) {
    Judgement j = judge(c);
    if (j.kind != Judgement::Kind::fail) continue;
    if (!body.empty()) body += "\n";
    body += fmt::format("# {}: {} ({})\n", c.id, j.outcome, j.reason);
    body += (c.repro_command.empty() ? "# (no repro command recorded)" : c.repro_command) + "\n";
  }
  if (body.empty()) return "Nothing failed; nothing to reproduce.\n";
  return "```bash\n" + body + "```\n";
}

std::string charts_section(const RunResult& r) {
  if (!has_step_data(r)) return "No step data recorded; no charts.\n";
  return fmt::format("![Loss per step]({})\n\n![Step time per step]({})\n", kLossChartFile, kStepTimeChartFile);
}

std::string artifacts_section(const RunResult& r) {
  std::string s = fmt::format("- Run: {}, {}, {}", code(kResultsFile), code(kReportFile), code(kJunitFile));
  if (has_step_data(r)) s += fmt::format(", {}, {}", code(kLossChartFile), code(kStepTimeChartFile));
  s += "\n";
  for (auto& c : r.cells) {
    s += "- " + code(c.id) + ":";
    if (c.artifacts.empty()) s += " none recorded";
    for (size_t i = 0; i < c.artifacts.size(); ++i) s += (i ? ", " : " ") + code(c.artifacts[i]);
    s += "\n";
  }
  return s;
}

std::string actions_section(const RunResult& r) {
  if (r.next_actions.empty()) return "None.\n";
  std::string s;
  for (size_t i = 0; i < r.next_actions.size(); ++i) s += fmt::format("{}. {}\n", i + 1, r.next_actions[i]);
  return s;
}

}  // namespace

bool has_step_data(const RunResult& run) {
  for (auto& c : run.cells)
    if (!c.steps.empty()) return true;
  return false;
}

std::string render_markdown(const RunResult& r) {
  std::string s = header(r);
  auto section = [&](const char* title, const std::string& body) { s += fmt::format("\n## {}\n\n{}", title, body); };
  section("Executive Summary", (r.summary.empty() ? "No summary recorded." : r.summary) + "\n");
  section("Comparison Matrix", matrix(r));
  if (auto nr = not_run_section(r); !nr.empty())
    section(r.completion.end == RunEnd::cells_missing ? "Missing" : "Not Run", nr);
  if (auto st = settings_section(r); !st.empty()) section("Settings", st);
  section("What Decides the Outcome", attribution_section(r));
  section("Findings", render_findings_section(r));
  if (auto ranks = render_ranks_section(r); !ranks.empty()) section("Ranks", ranks);
  section("Acceptance Gates", gates_section(r));
  if (auto obs = observation_section(r); !obs.empty()) section("Observation Cost", obs);
  if (auto dense = dense_section(r); !dense.empty()) section("Against Dense Attention", dense);
  section("Reproduce", repro_section(r));
  section("Charts", charts_section(r));
  section("Artifacts", artifacts_section(r));
  section("Next Actions", actions_section(r));
  s += "\n---\n\n*Generated by nsa-harness from this run's results.json; re-render with `nsa-harness report DIR`.*\n";
  return s;
}

void MarkdownWriter::write(const RunResult& run, const std::string& dir) {
  write_file_atomic(dir + "/" + kReportFile, render_markdown(run));
}

}  // namespace harness
