#include "harness/report/markdown_root_cause.h"

#include <fmt/format.h>

#include <cctype>

#include "harness/analysis/judgement.h"
#include "harness/report/report_links.h"
#include "harness/report/text_format.h"

namespace harness {

namespace {
constexpr size_t kCellsNamed = 3;        // more ids than this read as a wall; the matrix has them all
constexpr size_t kEvidenceBullets = 4;   // the top facts; the cell page has every one
constexpr size_t kEvidenceChars = 160;   // a value longer than this belongs on the cell page
constexpr size_t kConsequences = 6;
constexpr size_t kOtherFailures = 16;

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// "[`a`](…), [`b`](…) and 3 more".
std::string linked_cells(const std::vector<std::string>& ids) {
  std::string s;
  const size_t shown = std::min(ids.size(), kCellsNamed);
  for (size_t i = 0; i < shown; ++i) s += (i ? (i + 1 == shown && shown == ids.size() ? " and " : ", ") : "") + cell_link(ids[i]);
  if (ids.size() > shown) s += fmt::format(" and {} more", ids.size() - shown);
  return s;
}

// Letters and digits only: "optimizer: AdamW update" and "optimizer (AdamW update)" say the same.
std::string alnum(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out += static_cast<char>(c);
  return out;
}

// " at step 5 in layer 0 / slc", leaving out what the title already says.
std::string where(const Finding& f) {
  std::string s;
  if (f.step && f.title.find(fmt::format("step {}", *f.step)) == std::string::npos) s += fmt::format(" at step {}", *f.step);
  const bool bare_step = f.step && f.location == fmt::format("step {}", *f.step);
  if (!f.location.empty() && !bare_step && alnum(f.title).find(alnum(f.location)) == std::string::npos)
    s += " in " + f.location;
  return s;
}

std::string planted(const FailureGroup& g) {
  std::string s;
  for (auto& f : g.faults) s += (s.empty() ? "" : ", ") + code(f);
  return s;
}

// Scalar evidence only, short values only: the facts a reader weighs first;
// the first non-finite record (where NaN began) on one line.
std::string evidence_bullets(const Finding& f) {
  std::string s;
  size_t n = 0;
  if (auto it = f.evidence.find("first_non_finite"); it != f.evidence.end() && it->is_object()) {
    std::string rec;
    for (auto& [k, v] : it->items()) rec += (rec.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    if (rec.size() <= 2 * kEvidenceChars) s += "  - first non-finite record: " + rec + "\n", ++n;
  }
  for (auto& [k, v] : f.evidence.items()) {
    if (v.is_structured() || n == kEvidenceBullets) continue;
    std::string text = v.is_string()         ? v.get<std::string>()
                       : v.is_number_float() ? fmt::format("{:.4g}", v.get<double>())
                                             : v.dump();
    if (text.size() > kEvidenceChars || text.find('\n') != std::string::npos) continue;
    s += "  - " + k + ": " + text + "\n";
    ++n;
  }
  return s;
}

std::string severity_word(const Finding& f) { return f.severity == Severity::blocking ? "blocking" : "warning"; }

std::string workaround_line(const FailureGroup& g) {
  if (g.wrong_answer) return "none — a path that computes the wrong attention is a bug to fix, whatever else passes";
  if (g.workarounds.empty()) return "none — no passing cell runs the same workload under other settings";
  std::string s = g.workarounds.front();
  if (g.workarounds.size() > 1) s += fmt::format(" (and {} alike)", plural(g.workarounds.size() - 1, "more cell", "more cells"));
  if (!g.worked_around) s += fmt::format("; {} of {} cells have none", g.cause.cells.size() - g.workarounds.size(),
                                         g.cause.cells.size());
  return s;
}
}  // namespace

std::string render_root_cause(const Diagnosis& d) {
  if (d.failures.empty()) return "";
  const FailureGroup& g = d.failures.front();
  const Finding& f = g.cause.finding;
  std::string s = fmt::format("**{}**{} ({}) — the {} in {}.\n\n", f.title, where(f), code(f.code),
                              failure_noun(g.outcome, g.reason), plural(g.cause.cells.size(), "cell", "cells"));
  if (g.precursor)
    s += fmt::format("Why: {} ({}), in the same {}.\n\n", g.precursor->finding.title, code(g.precursor->finding.code),
                     g.precursor->cells.size() == 1 ? "cell" : "cells");
  s += "- Cells it explains: " + linked_cells(g.cause.cells) + "\n";
  if (!g.faults.empty()) s += "- Planted fault (on purpose, by the scenario): " + planted(g) + "\n";
  if (!f.detail.empty()) s += "- What was seen: " + table_cell(f.detail) + "\n";
  if (auto ev = evidence_bullets(f); !ev.empty())
    s += "- Evidence (all of it, with stacks and event tails, on " + cell_link(g.cause.cells.front()) + "):\n" + ev;
  for (auto& a : g.attributions) s += "- What decides it: " + a.statement + ".\n";
  s += "- Workaround: " + workaround_line(g) + ".\n";
  if (!g.consequences.empty()) {
    s += "\nConsequences seen in the same cells (follow from the cause; fix it first):\n\n";
    for (size_t i = 0; i < std::min(g.consequences.size(), kConsequences); ++i) {
      const auto& c = g.consequences[i];
      s += fmt::format("- {}{} ({}, {}) in {}\n", c.finding.title, where(c.finding), code(c.finding.code),
                       severity_word(c.finding), plural(c.cells.size(), "cell", "cells"));
    }
    if (g.consequences.size() > kConsequences)
      s += fmt::format("- and {} more on the cell pages\n", g.consequences.size() - kConsequences);
  }
  return s;
}

std::string render_other_failures(const Diagnosis& d) {
  if (d.failures.size() < 2) return "";
  std::string s = "Independent of the root cause (other cells, another finding; none has a workaround unless it says so):\n\n";
  for (size_t i = 1; i < std::min(d.failures.size(), kOtherFailures + 1); ++i) {
    const FailureGroup& g = d.failures[i];
    const Finding& f = g.cause.finding;
    s += fmt::format("- **{}** ({}) in {}: {}", failure_noun(g.outcome, g.reason), code(f.code), linked_cells(g.cause.cells),
                     f.title);
    if (g.precursor) s += fmt::format("; why: {}", g.precursor->finding.title);
    if (!g.faults.empty()) s += "; planted: " + planted(g);
    s += g.worked_around ? ". Workaround: " + g.workarounds.front() + ".\n" : ".\n";
  }
  if (d.failures.size() > kOtherFailures + 1)
    s += fmt::format("- and {} more in the {}\n", d.failures.size() - kOtherFailures - 1,
                     md_link("appendix", kAppendixFile, "findings"));
  return s;
}

}  // namespace harness
