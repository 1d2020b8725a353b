#include "harness/report/markdown_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "harness/analysis/judgement.h"
#include "harness/analysis/root_cause.h"
#include "harness/analysis/summary.h"
#include "harness/core/atomic_file.h"
#include "harness/core/cell_dir.h"
#include "harness/core/enum_names.h"
#include "harness/report/markdown_appendix.h"
#include "harness/report/markdown_cell_page.h"
#include "harness/report/markdown_completion.h"
#include "harness/report/markdown_ranks.h"
#include "harness/report/markdown_root_cause.h"
#include "harness/report/markdown_sections.h"
#include "harness/report/report_writer.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {

constexpr EnumName<Decision> kDecisionIcons[] = {
    {Decision::go, "✅"}, {Decision::conditional_go, "⚠️"}, {Decision::no_go, "❌"}};
std::string decision_icon(Decision d) { return std::string(name_in(kDecisionIcons, d, "")); }

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

constexpr size_t kTopWarnings = 5;
constexpr size_t kTopActions = 5;

std::string warnings_section(const Diagnosis& d) {
  if (d.other_warnings.empty()) return "";
  std::string s;
  for (size_t i = 0; i < std::min(d.other_warnings.size(), kTopWarnings); ++i) {
    const auto& w = d.other_warnings[i];
    s += fmt::format("- {} ({}) in {} cell(s), e.g. {}\n", w.finding.title, code(w.finding.code), w.cells.size(),
                     cell_link(w.cells.front()));
  }
  if (d.other_warnings.size() > kTopWarnings)
    s += fmt::format("- and {} more in the {}\n", d.other_warnings.size() - kTopWarnings,
                     md_link("appendix", kAppendixFile, "findings"));
  return s;
}

// The gates that were not met and decided their cell's outcome (a gate of a
// cell that hung or crashed anyway says nothing the failures above do not);
// the whole table is the appendix's.
std::string unmet_gates(const RunResult& r) {
  if (r.gates.empty()) return "No acceptance gates were set.\n";
  RunResult deciding;
  size_t unmet = 0;
  for (auto& g : r.gates) {
    if (g.met) continue;
    ++unmet;
    auto c = std::find_if(r.cells.begin(), r.cells.end(), [&](const CellResult& x) { return x.id == g.cell; });
    if (c == r.cells.end() || !is_failure(c->outcome)) deciding.gates.push_back(g);
  }
  const std::string all = md_link("appendix", kAppendixFile, "acceptance-gates");
  if (!unmet) return fmt::format("All {} gate checks met (table in the {}).\n", r.gates.size(), all);
  std::string s = fmt::format("{} of {} gate checks not met (all in the {})", unmet, r.gates.size(), all);
  if (deciding.gates.empty()) return s + ", each in a cell that failed for the reason above.\n";
  return s + ":\n\n" + gates_section(deciding);
}

std::string matrix_section(const RunResult& r) {
  if (r.cells.size() <= kInlineCellsOnTop) return matrix_table(r, false);
  const auto passed = std::count_if(r.cells.begin(), r.cells.end(),
                                    [](const CellResult& c) { return judge(c).kind == Judgement::Kind::pass; });
  return matrix_table(r, true) + fmt::format("\nThe other {} cells passed; every cell is in the {}.\n", passed,
                                             md_link("appendix", kAppendixFile, "comparison-matrix"));
}

std::string appendices_section() {
  return fmt::format("- {}: the whole matrix, settings, every finding, gate, repro command, file and next action.\n"
                     "- One page per cell (linked from the matrix): its findings with their full evidence — stacks, "
                     "first non-finite record, event tail, kernels — and its files.\n",
                     md_link("Appendix", kAppendixFile));
}

}  // namespace

std::string render_markdown(const RunResult& r) {
  const Diagnosis d = diagnose(r);
  std::string s = header(r);
  auto section = [&](const char* title, const std::string& body) {
    if (!body.empty()) s += fmt::format("\n## {}\n\n{}", title, body);
  };
  section("Executive Summary", short_summary(r) + "\n");
  section("Root Cause", render_root_cause(d));
  section("Other Failures", render_other_failures(d));
  section(r.completion.end == RunEnd::cells_missing ? "Missing" : "Not Run", not_run_section(r));
  section("Comparison Matrix", matrix_section(r));
  if (r.cells.size() <= kInlineCellsOnTop) section("Settings", settings_section(r, /*top=*/true));
  if (r.cells.size() <= kInlineCellsOnTop) section("Ranks", render_ranks_section(r));
  section("Warnings", warnings_section(d));
  section("Acceptance Gates", unmet_gates(r));
  section("Observation Cost", observation_section(r));
  section("Against Dense Attention", dense_section(r));
  section("Reproducibility", reproducibility_section(r, true));
  section("Reproduce", repro_section(r, true) + (d.failures.size() > 1 ? fmt::format("\nEvery failing cell's command is in the {}.\n", md_link("appendix", kAppendixFile, "reproduce")) : ""));
  section("Charts", charts_section(r));
  section("Next Actions", actions_section(r, kTopActions));
  section("Appendices", appendices_section());
  s += "\n---\n\n*Generated by nsa-harness from this run's results.json; re-render with `nsa-harness report DIR`.*\n";
  return s;
}

void MarkdownWriter::write(const RunResult& run, const std::string& dir) {
  namespace fs = std::filesystem;
  const FileExists exists = [&](const std::string& rel) {
    std::error_code ec;
    return fs::exists(fs::path(dir) / rel, ec);
  };
  write_file_atomic(dir + "/" + kReportFile, render_markdown(run));
  write_file_atomic(dir + "/" + kAppendixFile, render_appendix(run, exists));
  for (auto& c : run.cells) {
    const fs::path cell_dir = fs::path(dir) / "cells" / cell_dir_name(c.id);
    std::error_code ec;
    fs::create_directories(cell_dir, ec);
    if (ec) throw std::runtime_error("cannot create " + cell_dir.string() + ": " + ec.message());
    write_file_atomic((cell_dir / kCellPageFile).string(), render_cell_page(run, c, exists));
  }
}

}  // namespace harness
