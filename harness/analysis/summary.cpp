#include "harness/analysis/summary.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/analysis/attribution.h"
#include "harness/analysis/axis_settings.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/verdict.h"

namespace harness {

namespace {

std::string plural(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string counts_sentence(const RunResult& run, const DecisionBasis& b) {
  std::map<Outcome, int> by_outcome;
  std::vector<std::string> skip_reasons;
  for (auto& c : run.cells) {
    by_outcome[c.outcome]++;
    if (c.outcome == Outcome::skip) {
      std::string r = c.reason.value_or("no reason given");
      if (std::find(skip_reasons.begin(), skip_reasons.end(), r) == skip_reasons.end()) skip_reasons.push_back(r);
    }
  }
  std::vector<std::string> parts;
  for (auto& [o, n] : by_outcome)
    if (o != Outcome::skip) parts.push_back(fmt::format("{} {}", n, to_string(o)));
  std::string name = run.scenario.is_object() ? run.scenario.value("name", "") : "";
  // Cells missing from every shard count in the matrix they were not run from.
  std::string s = fmt::format("Ran {} of {}", b.ran, plural(run.cells.size() + b.missing.size(), "cell", "cells"));
  if (!name.empty()) s += fmt::format(" of scenario `{}`", name);
  if (!parts.empty()) {
    s += ": ";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  }
  if (b.skipped) {
    s += fmt::format("; {} skipped (", b.skipped);
    for (size_t i = 0; i < skip_reasons.size(); ++i) s += (i ? ", " : "") + skip_reasons[i];
    s += ")";
  }
  return s + ".";
}

// One sentence per (outcome, reason) among the failing cells.
std::vector<std::string> failure_sentences(const RunResult& run) {
  struct Group { std::string outcome, reason; std::vector<const CellResult*> cells; };
  std::vector<Group> groups;
  for (auto& c : run.cells) {
    Judgement j = judge(c);
    if (j.kind != Judgement::Kind::fail) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.outcome == j.outcome && g.reason == j.reason; });
    if (it == groups.end()) { groups.push_back({j.outcome, j.reason, {}}); it = groups.end() - 1; }
    it->cells.push_back(&c);
  }
  std::vector<std::string> out;
  for (auto& g : groups) {
    std::vector<std::string> ids;
    std::set<int> steps;
    for (auto* c : g.cells) {
      ids.push_back(c->id);
      Judgement j = judge(*c);
      if (j.deciding && j.deciding->step) steps.insert(*j.deciding->step);
    }
    std::string s = fmt::format("{} ({}) in {} ({})", failure_noun(g.outcome, g.reason), g.reason,
                                plural(ids.size(), "cell", "cells"), cell_list(ids));
    Judgement first = judge(*g.cells.front());
    if (first.deciding) {
      s += ": " + first.deciding->title;
      // Titles often say "at step N" already; do not repeat it.
      if (steps.size() == 1 && first.deciding->title.find(fmt::format("step {}", *steps.begin())) != std::string::npos)
        steps.clear();
      if (steps.size() == 1) s += fmt::format(" (step {}", *steps.begin());
      else if (steps.size() > 1) s += fmt::format(" (steps {}", fmt::join(steps, ", "));
      if (!first.deciding->location.empty()) s += (steps.empty() ? " (" : ", ") + first.deciding->location;
      if (!steps.empty() || !first.deciding->location.empty()) s += ")";
    } else if (g.cells.front()->term_signal) {
      s += fmt::format(": killed by signal {}", *g.cells.front()->term_signal);
    } else if (g.cells.front()->exit_code) {
      s += fmt::format(": exit status {}", *g.cells.front()->exit_code);
    }
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    out.push_back(s + ".");
  }
  return out;
}

std::string warning_sentence(const RunResult& run) {
  std::vector<std::string> parts;
  std::vector<std::string> codes;
  for (auto& c : run.cells)
    for (auto& f : c.findings)
      if (f.severity == Severity::warning && c.outcome != Outcome::skip &&
          std::find(codes.begin(), codes.end(), f.code) == codes.end())
        codes.push_back(f.code);
  for (auto& code : codes) {
    std::vector<std::string> ids;
    std::string title;
    for (auto& c : run.cells)
      for (auto& f : c.findings)
        if (f.code == code && f.severity == Severity::warning && c.outcome != Outcome::skip) {
          if (title.empty()) title = f.title;
          if (ids.empty() || ids.back() != c.id) ids.push_back(c.id);
        }
    parts.push_back(fmt::format("{} in {} ({}): {}", code, plural(ids.size(), "cell", "cells"), cell_list(ids), title));
  }
  if (parts.empty()) return "";
  std::string s = "Warnings: ";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s + ".";
}

std::string settings_text(const AxisValues& settings) {
  std::string s;
  for (size_t i = 0; i < settings.size(); ++i)
    s += (i ? " and " : "") + describe_setting(settings[i].first, settings[i].second);
  return s;
}

std::string decision_sentence(const RunResult& run, const DecisionBasis& b) {
  std::string d(to_string(b.decision));
  if (!b.missing.empty())
    return fmt::format("Decision {}: {} in no shard ({}), so the matrix was not tested whole; run the shards that "
                       "failed again and merge.", d, plural(b.missing.size(), "cell is", "cells are"),
                       cell_list(b.missing));
  if (b.ran == 0)
    return fmt::format("Decision {}: no cell ran ({} skipped), so nothing was verified on this platform; "
                       "nothing failed either.", d, b.skipped);
  if (!b.no_workaround.empty()) {
    std::vector<std::string> wrong;
    for (auto& c : run.cells)
      if (std::find(b.no_workaround.begin(), b.no_workaround.end(), c.id) != b.no_workaround.end() &&
          is_wrong_answer(judge(c).reason))
        wrong.push_back(c.id);
    if (!wrong.empty())
      return fmt::format("Decision {}: {} computed a wrong answer ({}); a path or precision that computes the "
                         "wrong attention is a bug to fix, whatever other settings pass.",
                         d, plural(wrong.size(), "cell", "cells"), cell_list(wrong));
    return fmt::format("Decision {}: {} failed with no passing cell that runs the same workload under other "
                       "settings ({}).", d, plural(b.no_workaround.size(), "cell", "cells"),
                       cell_list(b.no_workaround));
  }
  if (!b.failing.empty()) {
    std::string s = fmt::format("Decision {}: every failing cell passes under other settings — ", d);
    for (size_t i = 0; i < b.workarounds.size(); ++i)
      s += fmt::format("{}`{}` with {}", i ? "; " : "", b.workarounds[i].failing_cell,
                       settings_text(b.workarounds[i].settings));
    s += ".";
    if (!b.warning_codes.empty()) s += fmt::format(" Warnings also fired ({}).", fmt::join(b.warning_codes, ", "));
    return s;
  }
  if (!b.warning_codes.empty())
    return fmt::format("Decision {}: every cell that ran passed, but warnings fired ({}).", d,
                       fmt::join(b.warning_codes, ", "));
  return fmt::format("Decision {}: every cell that ran passed, met its acceptance gates and raised no warning.", d);
}

std::string expectation_sentence(const RunResult& run) {
  int with = 0, met = 0;
  std::vector<std::string> missed;
  for (auto& c : run.cells) {
    if (!c.expect) continue;
    with++;
    if (c.expect_met.value_or(false)) met++;
    else missed.push_back(c.id);
  }
  if (!with) return "";
  std::string s = fmt::format("Expectations: {} of {} cells matched their `expect`", met, with);
  if (!missed.empty()) s += " (not: " + cell_list(missed) + ")";
  return s + ".";
}

}  // namespace

std::string cell_list(const std::vector<std::string>& ids, size_t max_shown) {
  std::string s;
  size_t shown = std::min(ids.size(), max_shown);
  for (size_t i = 0; i < shown; ++i) {
    if (i) s += (i + 1 == shown && shown == ids.size()) ? " and " : ", ";
    s += "`" + ids[i] + "`";
  }
  if (ids.size() > shown) s += fmt::format(" and {} more", ids.size() - shown);
  return s;
}

std::string short_summary(const RunResult& run) {
  DecisionBasis basis = explain_decision(run);
  std::string s = counts_sentence(run, basis);
  if (auto e = expectation_sentence(run); !e.empty()) s += " " + e;
  return s + "\n\n" + decision_sentence(run, basis);
}

std::string executive_summary(const RunResult& run) {
  DecisionBasis basis = explain_decision(run);
  std::vector<std::string> paragraphs;
  std::string first = counts_sentence(run, basis);
  for (auto& s : failure_sentences(run)) first += " " + s;
  paragraphs.push_back(first);
  auto attributions = run.attributions.empty() ? attribute(run.cells) : run.attributions;
  if (!attributions.empty()) {
    std::string s = "What decides it: ";
    for (size_t i = 0; i < attributions.size(); ++i) s += (i ? "; " : "") + attributions[i].statement;
    paragraphs.push_back(s + ".");
  }
  if (auto w = warning_sentence(run); !w.empty()) paragraphs.push_back(w);
  if (auto e = expectation_sentence(run); !e.empty()) paragraphs.push_back(e);
  paragraphs.push_back(decision_sentence(run, basis));
  std::string out;
  for (size_t i = 0; i < paragraphs.size(); ++i) out += (i ? "\n\n" : "") + paragraphs[i];
  return out;
}

}  // namespace harness
