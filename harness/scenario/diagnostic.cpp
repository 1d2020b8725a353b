#include "harness/scenario/diagnostic.h"

#include "nsa/edit_distance.h"

#include <algorithm>

#include "harness/scenario/limits.h"

namespace harness {

std::string format_diagnostic(const Diagnostic& d) {
  std::string out = d.file;
  if (d.line > 0) out += ":" + std::to_string(d.line) + ":" + std::to_string(std::max(d.col, 1));
  out += ": ";
  if (!d.key_path.empty()) out += d.key_path + ": ";
  out += d.message + "\n";
  if (d.line > 0 && !d.source_line.empty()) {
    out += d.source_line + "\n";
    // Keep the line's own tabs in the caret's indent so it lines up in any terminal.
    std::string pad;
    for (int i = 0; i + 1 < d.col - d.source_shift && i < static_cast<int>(d.source_line.size()); ++i)
      pad += d.source_line[i] == '\t' ? '\t' : ' ';
    out += pad + "^\n";
  }
  return out;
}

namespace {
std::string join_formatted(const std::vector<Diagnostic>& diags) {
  std::string all;
  for (auto& d : diags) all += format_diagnostic(d);
  return all;
}

using nsa::edit_distance;

// The first kMaxDiagnostics problems in full, then one line counting the rest.
std::vector<Diagnostic> shown(std::vector<Diagnostic> diags) {
  if (diags.size() <= kMaxDiagnostics) return diags;
  Diagnostic more;
  more.file = diags.front().file;
  more.message = "... and " + std::to_string(diags.size() - kMaxDiagnostics) + " more problems";
  diags.resize(kMaxDiagnostics);
  diags.push_back(more);
  return diags;
}
}  // namespace

ScenarioError::ScenarioError(std::vector<Diagnostic> diags)
    : ScenarioError(shown(std::move(diags)), 0) {}

ScenarioError::ScenarioError(std::vector<Diagnostic> diags, int)
    : std::runtime_error(join_formatted(diags)), diagnostics(std::move(diags)) {}

std::string did_you_mean_ranked(const std::vector<std::string>& ranked) {
  if (ranked.empty()) return "";
  std::string out = " (did you mean ";
  size_t n = std::min<size_t>(ranked.size(), 3);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += (i + 1 == n) ? " or " : ", ";
    out += "'" + ranked[i] + "'";
  }
  return out + "?)";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // Typos of our short keys are one or two edits away; longer names (probe and
  // fault names) tolerate one more before a suggestion stops being helpful.
  const size_t limit = word.size() > 8 ? 3 : 2;
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> ranked;
  for (auto& [d, c] : scored) ranked.push_back(c);
  return did_you_mean_ranked(ranked);
}

}  // namespace harness
