#include "harness/report/markdown_findings.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "harness/analysis/judgement.h"
#include "harness/analysis/summary.h"
#include "harness/report/markdown_trace.h"
#include "harness/report/text_format.h"

namespace harness {
using nlohmann::json;

namespace {
constexpr size_t kStackLines = 30;    // an excerpt: the top frames decide; the file has the rest
constexpr size_t kTableRows = 10;     // kernel tables are sorted by time; the tail rarely matters
constexpr size_t kInlineJson = 200;   // longer objects belong in results.json, not in prose

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:g}", v.get<double>());
  if (v.is_null()) return "null";
  return v.dump();
}

bool is_table(const json& v) {
  return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& r) { return r.is_object(); });
}

bool is_stack_key(const std::string& k) {
  return k.find("stack") != std::string::npos || k.find("backtrace") != std::string::npos;
}

std::string stack_block(const json& v) {
  std::vector<std::string> lines;
  if (v.is_array()) {
    for (auto& l : v) lines.push_back(scalar_text(l));
  } else {
    std::istringstream in(scalar_text(v));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::string s = lines.size() > kStackLines
                      ? fmt::format("Stack (first {} of {} lines):\n\n", kStackLines, lines.size())
                      : std::string("Stack:\n\n");
  s += "```text\n";
  for (size_t i = 0; i < std::min(lines.size(), kStackLines); ++i) s += lines[i] + "\n";
  return s + "```\n";
}

struct Group {
  const Finding* finding;
  std::vector<std::string> cells;
};

bool same_finding(const Finding& a, const Finding& b) {
  return a.code == b.code && a.title == b.title && a.step == b.step && a.location == b.location &&
         a.detail == b.detail;
}

void add_to_group(std::vector<Group>& groups, const Finding& f, const std::string& cell) {
  auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return same_finding(*g.finding, f); });
  if (it == groups.end()) groups.push_back({&f, {cell}});
  else if (std::find(it->cells.begin(), it->cells.end(), cell) == it->cells.end()) it->cells.push_back(cell);
}

std::string ids_text(const std::vector<std::string>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + code(ids[i]);
  return s;
}

std::string blocking_subsection(int n, const Group& g) {
  const Finding& f = *g.finding;
  std::string s = fmt::format("### {}. {} ({})\n\n", n, f.title, code(f.code));
  s += "- Cells: " + ids_text(g.cells) + "\n";
  if (f.step) s += fmt::format("- Step: {}\n", *f.step);
  if (!f.location.empty()) s += "- Location: " + f.location + "\n";
  if (!f.detail.empty()) s += "\n" + f.detail + "\n";
  std::string ev = render_evidence(f.evidence);
  if (!ev.empty()) s += "\n" + ev;
  return s;
}

// A failing cell with no blocking finding still gets a subsection: its exit tells what is known.
std::string bare_failure_subsection(int n, const CellResult& c, const Judgement& j) {
  std::string s = fmt::format("### {}. {} without a recorded finding ({})\n\n", n, j.outcome, code(j.reason));
  s += "- Cells: " + code(c.id) + "\n";
  if (c.exit_code) s += fmt::format("- Exit status: {}\n", *c.exit_code);
  if (c.term_signal) s += fmt::format("- Signal: {}\n", *c.term_signal);
  return s;
}
}  // namespace

std::string render_table(const json& rows, size_t max_rows) {
  if (!is_table(rows)) return "";
  std::vector<std::string> cols;
  if (rows.front().contains("name")) cols.push_back("name");
  for (auto& [k, v] : rows.front().items())
    if (k != "name") cols.push_back(k);
  std::string s = "|";
  for (auto& c : cols) s += " " + table_cell(c) + " |";
  s += "\n|";
  for (size_t i = 0; i < cols.size(); ++i) s += "---|";
  s += "\n";
  for (size_t r = 0; r < std::min(rows.size(), max_rows); ++r) {
    s += "|";
    for (auto& c : cols) s += " " + table_cell(rows[r].contains(c) ? scalar_text(rows[r].at(c)) : "") + " |";
    s += "\n";
  }
  if (rows.size() > max_rows) s += fmt::format("\n({} more rows)\n", rows.size() - max_rows);
  return s;
}

std::string render_evidence(const json& evidence) {
  if (!evidence.is_object() || evidence.empty()) return "";
  std::vector<std::string> blocks;
  std::string bullets;
  for (auto& [k, v] : evidence.items()) {
    if (k == "first_non_finite" || is_stack_key(k) || is_table(v)) continue;
    std::string text;
    if (v.is_array() && std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); })) {
      for (auto& e : v) text += (text.empty() ? "" : ", ") + scalar_text(e);
    } else if (v.is_structured()) {
      text = v.dump();
      if (text.size() > kInlineJson) text = text.substr(0, kInlineJson) + "…";
      text = code(text);
    } else {
      text = scalar_text(v);
    }
    bullets += "- " + k + ": " + text + "\n";
  }
  if (!bullets.empty()) blocks.push_back("Evidence:\n\n" + bullets);
  if (evidence.contains("first_non_finite") && evidence.at("first_non_finite").is_object()) {
    std::string t = "First non-finite record:\n\n| Field | Value |\n|---|---|\n";
    for (auto& [k, v] : evidence.at("first_non_finite").items())
      t += "| " + table_cell(k) + " | " + table_cell(v.is_structured() ? v.dump() : scalar_text(v)) + " |\n";
    blocks.push_back(t);
  }
  for (auto& [k, v] : evidence.items())
    if (is_stack_key(k)) blocks.push_back(stack_block(v));
  for (auto& [k, v] : evidence.items())
    if (is_table(v) && !is_stack_key(k)) blocks.push_back(k + ":\n\n" + render_table(v, kTableRows));
  std::string s;
  for (size_t i = 0; i < blocks.size(); ++i) s += (i ? "\n" : "") + blocks[i];
  return s;
}

std::string render_findings_section(const RunResult& run) {
  std::vector<std::string> blocks;
  std::vector<Group> blocking, warnings;
  std::vector<std::pair<const CellResult*, Judgement>> bare;
  for (auto& c : run.cells) {
    if (c.outcome == Outcome::skip) continue;
    bool any_blocking = false;
    for (auto& f : c.findings) {
      if (f.severity == Severity::blocking) { add_to_group(blocking, f, c.id); any_blocking = true; }
      if (f.severity == Severity::warning) add_to_group(warnings, f, c.id);
    }
    Judgement j = judge(c);
    if (j.kind == Judgement::Kind::fail && !any_blocking) bare.emplace_back(&c, j);
  }
  int n = 0;
  for (auto& g : blocking) blocks.push_back(blocking_subsection(++n, g));
  for (auto& [c, j] : bare) blocks.push_back(bare_failure_subsection(++n, *c, j));
  if (!warnings.empty()) {
    std::string t = "### Warnings\n\n| Code | Title | Cells | Step | Location |\n|---|---|---|---|---|\n";
    for (auto& g : warnings) {
      const Finding& f = *g.finding;
      t += "| " + code(f.code) + " | " + table_cell(f.title) + " | " + table_cell(ids_text(g.cells)) + " | " +
           (f.step ? std::to_string(*f.step) : "—") + " | " + (f.location.empty() ? "—" : table_cell(f.location)) +
           " |\n";
    }
    blocks.push_back(t);
  }
  for (auto& c : run.cells) {
    if (c.outcome == Outcome::skip) continue;
    std::string trace = render_trace_section(c);
    if (!trace.empty()) blocks.push_back(trace);
  }
  const std::string skipped = skipped_cells(run, code);
  if (!skipped.empty()) blocks.push_back("### Skipped cells\n\n" + skipped);
  if (blocks.empty()) return "No findings.\n";
  std::string s;
  for (size_t i = 0; i < blocks.size(); ++i) s += (i ? "\n" : "") + blocks[i];
  return s;
}

std::string skipped_cells(const RunResult& run, std::string (*name)(const std::string& cell_id)) {
  std::string s;
  for (auto& c : run.cells) {
    if (c.outcome != Outcome::skip) continue;
    s += "- " + name(c.id) + ": " + c.reason.value_or("no reason given");
    if (!c.findings.empty()) s += " — " + c.findings.front().title;
    s += "\n";
  }
  return s;
}

}  // namespace harness
