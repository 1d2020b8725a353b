#include "harness/report/markdown_sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/analysis/dense_baseline.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/observation_cost.h"
#include "harness/analysis/repeat_agreement.h"
#include "harness/analysis/root_cause.h"
#include "harness/report/markdown_findings.h"
#include "harness/report/markdown_report.h"
#include "harness/report/report_writer.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {

std::string outcome_cell(Outcome o) {
  if (o == Outcome::pass) return "✅ pass";
  if (o == Outcome::skip) return "⏭️ skip";
  return "❌ " + std::string(to_string(o));
}

// "0 `GPU-aaa` (Fake A)" per GPU the cell was given, and "shared by up to N
// cells" when others computed on it at the same time; "—" for none.
std::string gpu_cell(const CellResult& c) {
  if (c.gpus.empty()) return "—";
  std::string s;
  for (auto& g : c.gpus)
    s += fmt::format("{}{} {} ({})", s.empty() ? "" : "; ", g.index, code(g.uuid), table_cell(g.name));
  if (gpu_shared(c.gpu_sharers)) s += fmt::format(", shared by up to {} cells", c.gpu_sharers);
  return s;
}

constexpr size_t kProbeCostRows = 6;

// "±0.4 %", with the run-to-run part where repeats measured it: "±0.4 % (runs ±1.1 %)".
std::string noise_text(double step_noise, double run_noise) {
  std::string out = step_noise > 0 ? fmt::format("±{:.1f} %", step_noise * 100) : std::string("n/a");
  if (run_noise > 0) out += fmt::format(" (runs ±{:.1f} %)", run_noise * 100);
  return out;
}

}  // namespace

bool has_step_data(const RunResult& run) {
  return std::any_of(run.cells.begin(), run.cells.end(), [](const CellResult& c) { return !c.steps.empty(); });
}

std::string matrix_table(const RunResult& r, bool failing_only) {
  bool expectations = false, gpus = false;
  for (auto& c : r.cells) expectations |= c.expect.has_value(), gpus |= !c.gpus.empty();
  // The GPU column only where the harness placed cells on GPUs: a CPU run's table stays as it was.
  std::string s = "| Cell | Outcome | Reason | Steps | Last loss | tok/s | Step ms (median) |";
  std::string rule = "|---|---|---|---|---|---|---|";
  if (gpus) s += " GPU |", rule += "---|";
  if (expectations) s += " Expected |", rule += "---|";
  s += "\n" + rule + "\n";
  for (auto& c : r.cells) {
    if (failing_only && judge(c).kind == Judgement::Kind::pass) continue;
    s += fmt::format("| {} | {} | {} | {}/{} | {} | {} | {} |", table_cell(cell_link(c.id)), outcome_cell(c.outcome),
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
      s += fmt::format("| {} | ❔ missing | in no shard | — | — | — | —{}{} |\n", table_cell(code(id)),
                       gpus ? " | —" : "", expectations ? " | —" : "");
  return s;
}

namespace {

bool from_environment(const CellResult& c, const std::string& name) {
  return std::find(c.from_environment.begin(), c.from_environment.end(), name) != c.from_environment.end();
}

// Does the cell's id say all there is to its settings: no fault, and every
// flag one of the id's `K=V` parts, none from the environment?
bool settings_in_id(const CellResult& c) {
  if (!c.faults.empty()) return false;
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = c.id.find(',', start);
    parts.push_back(c.id.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (auto& [k, v] : c.flags)
    if (from_environment(c, k) || std::find(parts.begin(), parts.end(), k + "=" + v) == parts.end()) return false;
  return true;
}

}  // namespace

std::string settings_section(const RunResult& r, bool top) {
  bool any = false;
  size_t named_by_id = 0;
  for (auto& c : r.cells) {
    any |= !c.flags.empty() || !c.faults.empty();
    if (top && settings_in_id(c)) ++named_by_id;
  }
  std::string s;
  if (any && named_by_id == r.cells.size()) {
    s += fmt::format("Every cell ran with the flags its id names as `K=V` and no others: none from the environment, "
                     "no fault ({}).\n", md_link("table", kAppendixFile, "settings"));
  } else if (any) {
    s += "Flags and faults as each cell ran them (scenario, matrix, include; *env* = from the environment, written "
         "into the repro)";
    s += named_by_id > 0 ? fmt::format(", where its id does not say them all ({} more in the {}):\n\n", named_by_id,
                                       md_link("appendix", kAppendixFile, "settings"))
                         : std::string(":\n\n");
    s += "| Cell | Flags | Faults |\n|---|---|---|\n";
    for (auto& c : r.cells) {
      if (top && settings_in_id(c)) continue;
      auto from_env = [&](const std::string& name) { return from_environment(c, name); };
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
  int shared = 0, most = 0;
  for (auto& c : r.cells)
    if (gpu_shared(c.gpu_sharers)) ++shared, most = std::max(most, c.gpu_sharers);
  if (shared > 0)
    s += fmt::format("{}GPUs shared (`--cells-per-gpu`): {} cell(s) computed on a GPU that other cells used at the same "
                     "time, up to {} at once; their absolute timing limits are not judged, and a finding that rests on "
                     "time alone is re-run with the GPU to itself.\n", s.empty() ? "" : "\n", shared, most);
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

std::string dense_section(const RunResult& r) {
  const auto pairs = dense_comparisons(r.cells);
  if (pairs.empty()) return "";
  std::string s =
      "NSA's training throughput against dense causal attention (SDPA) with the same shapes, in this run, on this "
      "machine: median tok/s over the warm steps of each cell of a pair that differs only in `attention`, or also "
      "in flags only the NSA layer reads (`[NSA layer only]` in `nsa-harness list flags`), which leave the dense "
      "cell's program as it is: one dense cell is then the baseline of each such NSA cell.\n\n"
      "| NSA cell | Dense cell | NSA tok/s | Dense tok/s | NSA ÷ dense | Noise (±1σ) |\n|---|---|---|---|---|---|\n";
  for (const auto& d : pairs) {
    // The flags the pair differs in, named, so the pairing is read, not inferred from the ids.
    std::string dense = code(d.dense_cell);
    for (size_t i = 0; i < d.layer_only_axes.size(); ++i)
      dense += (i == 0 ? " (differs in " : ", ") + code(d.layer_only_axes[i]);
    if (!d.layer_only_axes.empty()) dense += ", NSA layer only)";
    s += fmt::format("| {} | {} | {:.0f} | {:.0f} | {:.2f}× | {} |\n", table_cell(code(d.nsa_cell)), table_cell(dense),
                     d.nsa_tok_s, d.dense_tok_s, d.ratio, noise_text(d.noise, d.run_noise));
  }
  s += "\nNoise: the two cells' step-to-step spreads; runs: the spread between repeated runs of each (`repeat: N`). "
       "The two cells are two processes, which can differ by more than one process's steps do: without repeats "
       "that part is not measured.\n";
  return s;
}

std::string observation_section(const RunResult& r) {
  auto costs = observation_costs(r.cells);
  if (costs.empty()) return "";
  std::string s = fmt::format(
      "What the probes cost per step (goal ≤ {:.0f} % watching every step, ≤ {:.0f} % with probes sampled by "
      "`every: N`): the timed step with the probes on plus the time the probes spent outside it, against the "
      "same cell with every probe off (for `probes=alternate`, the same process's unobserved odd steps). Steps "
      "are grouped by how they ran (eagerly, or replayed from the CUDA graph) and by which sampled probes ran "
      "at them; each group counts by its median, weighted by its share of the steps, so a sampled probe's rare "
      "expensive step is counted and one noisy step is not.\n\n"
      "| Observed cell | Step ms (probes on) | Probe ms outside the step | Step ms (probes off) | Cost | "
      "Noise (probes off, ±1σ) | Estimate (±1σ) | Goal | Met |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      kObservationCostGoal * 100, kSampledObservationCostGoal * 100);
  bool within_noise = false;
  for (const auto& c : costs) {
    const bool unresolved = c.noise() > 0 && std::abs(c.cost) < 2 * c.noise();
    within_noise = within_noise || unresolved;
    const auto pct = [](double x) { return x > 0 ? fmt::format("±{:.1f} %", x * 100) : std::string("n/a"); };
    s += fmt::format("| {} | {:.1f} | {:.2f} | {:.1f} | {:+.1f} %{} | {} | {} | ≤ {:.0f} % | {} |\n",
                     table_cell(code(c.observed_cell)), c.observed_step_ms, c.observed_probe_ms, c.bare_ms, c.cost * 100,
                     unresolved ? " (within noise)" : "", noise_text(c.bare_noise, c.run_noise), pct(c.estimate_noise),
                     c.goal * 100,
                     c.cost <= c.goal ? "✅" : "❌");
  }
  s += "\nNoise: the unobserved cell's step-to-step spread; runs: the spread between its repeated runs (`repeat: "
       "N`), counted for each of the two runs a cost compares (without repeats, two processes' difference is not "
       "measured, and can be larger than a process's step noise); Estimate: the standard error of the cost itself, "
       "from each class of steps' spread and count (a class of a few sampled steps makes it wide).\n";
  if (within_noise)
    s += "\nA cost within twice the noises together (in quadrature) cannot be told from them: more steps or "
         "`repeat: N` narrow it.\n";
  const auto has_hooks = [&](const ObservationCost& c) {
    for (const auto& cell : r.cells)
      if (cell.id == c.cell_id && !cell.probe_costs.empty()) return true;
    return false;
  };
  if (std::any_of(costs.begin(), costs.end(), has_hooks))
    s += fmt::format("\nWhere the time outside the step goes, hook by hook: {}.\n",
                     md_link("appendix", kAppendixFile, "time-outside-the-step"));
  return s;
}

std::string probe_hooks_section(const RunResult& r) {
  std::string s;
  for (const auto& c : observation_costs(r.cells))
    for (const auto& cell : r.cells) {
      if (cell.id != c.cell_id || cell.probe_costs.empty()) continue;
      s += fmt::format("{}Step-end hooks of {} (median ms per step, largest first):\n\n", s.empty() ? "" : "\n",
                       code(c.observed_cell));
      s += render_table(nlohmann::json(cell.probe_costs), kProbeCostRows);
    }
  return s;
}

std::string reproducibility_section(const RunResult& r, bool summary) {
  const auto agreements = repeat_agreements(r.cells);
  if (agreements.empty()) return "";
  const auto parting = [](const RepeatAgreement& a) {
    return fmt::format("step {} ({})", *a.first_difference_step,
                       std::isfinite(a.first_difference) ? fmt::format("relative {:.1e}", a.first_difference)
                                                         : std::string("a non-finite loss"));
  };
  const auto settings = [](const RepeatAgreement& a) { return code(a.settings.empty() ? "(all)" : a.settings); };
  if (!summary) {
    std::string s = "Each setting's repeated runs (`repeat: N`), loss by loss over the steps every run recorded:\n\n"
                    "| Settings | Runs | Steps compared | Losses equal bit for bit | First difference |\n"
                    "|---|---|---|---|---|\n";
    for (const auto& a : agreements)
      s += fmt::format("| {} | {} | {} | {} | {} |\n", table_cell(settings(a)), a.cells.size(), a.steps_compared,
                       a.first_difference_step ? "no" : "yes", a.first_difference_step ? parting(a) : "—");
    return s;
  }
  size_t equal = 0;
  const RepeatAgreement* earliest = nullptr;
  for (const auto& a : agreements) {
    if (!a.first_difference_step) ++equal;
    else if (!earliest || *a.first_difference_step < *earliest->first_difference_step) earliest = &a;
  }
  std::string s = fmt::format("{} of {} settings run more than once (`repeat: N`) computed the same losses bit for "
                              "bit in every run",
                              equal, agreements.size());
  if (earliest)
    s += fmt::format("; the others' runs part, the earliest at {} in {}", parting(*earliest), settings(*earliest));
  s += fmt::format(" ({}).", md_link("table", kAppendixFile, "reproducibility"));
  if (earliest)
    s += " Where runs part, a repro command reruns the settings, not the bits: a failure after that step can come "
         "back later, earlier or not at all.";
  return s + "\n";
}

std::string repro_section(const RunResult& r, bool root_cause_only) {
  std::vector<std::string> shown;
  if (root_cause_only) {
    const auto failures = diagnose(r).failures;
    if (!failures.empty()) shown.push_back(failures.front().cause.cells.front());
  }
  std::string body;
  for (auto& c : r.cells) {
    Judgement j = judge(c);
    if (j.kind != Judgement::Kind::fail) continue;
    if (root_cause_only && std::find(shown.begin(), shown.end(), c.id) == shown.end()) continue;
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

std::string artifacts_section(const RunResult& r, const FileExists& exists) {
  auto file = [&](const std::string& path, const std::string& from_page_dir) {
    return exists(path) ? md_link(code(path), from_page_dir + path) : code(path) + " (not kept)";
  };
  std::string s = "- Run: " + file(kResultsFile, "") + ", " + file(kReportFile, "") + ", " + file(kJunitFile, "");
  if (has_step_data(r)) s += ", " + file(kLossChartFile, "") + ", " + file(kStepTimeChartFile, "");
  s += "\n";
  for (auto& c : r.cells) {
    s += "- " + cell_link(c.id) + ":";
    if (c.artifacts.empty()) s += " none recorded";
    for (size_t i = 0; i < c.artifacts.size(); ++i) s += (i ? ", " : " ") + file(c.artifacts[i], "");
    s += "\n";
  }
  return s;
}

std::string actions_section(const RunResult& r, size_t max_shown) {
  if (r.next_actions.empty()) return "None.\n";
  const size_t n = max_shown ? std::min(max_shown, r.next_actions.size()) : r.next_actions.size();
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{}. {}\n", i + 1, r.next_actions[i]);
  if (n < r.next_actions.size())
    s += fmt::format("\n{} more in the {}.\n", r.next_actions.size() - n, md_link("appendix", kAppendixFile, "next-actions"));
  return s;
}

}  // namespace harness
