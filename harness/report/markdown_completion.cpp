#include "harness/report/markdown_completion.h"

#include <fmt/format.h>

#include "harness/analysis/verdict.h"
#include "harness/report/text_format.h"

namespace harness {
namespace {

std::string id_list(const std::vector<std::string>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + code(ids[i]);
  return s;
}

std::string resume_command(const RunResult& r) {
  return r.command_line.empty() ? std::string("the same command with --resume")
                                : code(r.command_line + (r.command_line.find("--resume") == std::string::npos
                                                             ? " --resume"
                                                             : ""));
}

// What the present cells read on their own, before missing cells made it NO-GO.
std::string finished_decision_of_present(const RunResult& r) {
  RunResult present = r;
  present.completion = RunCompletion{};
  return std::string(to_string(decide(present)));
}

}  // namespace

bool run_is_complete(const RunResult& r) { return r.completion.end == RunEnd::complete; }

std::string incomplete_decision_line(const RunResult& r, const std::string& finished_decision) {
  const size_t total = r.cells.size() + r.completion.not_run.size();
  if (r.completion.end == RunEnd::cells_missing)
    return fmt::format("**Decision**: **no verdict** — {} of {} cells are missing from every shard (results.json "
                       "reads NO-GO; the cells present alone read {})\n",
                       r.completion.not_run.size(), total, finished_decision_of_present(r));
  if (r.completion.end == RunEnd::harness_failure)
    return fmt::format("**Decision**: **no verdict** — the harness failed ({} of {} cells finished; they alone read {})\n",
                       r.cells.size(), total, finished_decision);
  return fmt::format("**Decision**: **no verdict** — run cancelled ({} of {} cells finished; they alone read {})\n",
                     r.cells.size(), total, finished_decision);
}

std::string completion_banner(const RunResult& r) {
  const RunCompletion& k = r.completion;
  std::string s;
  if (k.end == RunEnd::cancelled)
    s += fmt::format("> **RUN CANCELLED**{} — {} cell(s) not run. This report covers the finished cells only and is "
                     "no verdict on the scenario; {} completes it.\n",
                     k.signal.empty() ? "" : " by " + k.signal, k.not_run.size(), resume_command(r));
  if (k.end == RunEnd::cells_missing)
    s += fmt::format("> **CELLS MISSING** — {} cell(s) are in no shard merged here (a shard failed or never ran). "
                     "This report is no verdict on the scenario; run those shards again and merge.\n",
                     k.not_run.size());
  if (k.end == RunEnd::harness_failure)
    s += fmt::format("> **HARNESS FAILURE** — {}. Nothing here is a finding about the model; {} cell(s) not run.\n",
                     table_cell(k.harness_failure), k.not_run.size());
  if (k.reused > 0 || !k.rerun_changed.empty()) {
    if (!s.empty()) s += ">\n";
    s += fmt::format("> Resumed: {} earlier result(s) reused", k.reused);
    if (!k.rerun_changed.empty())
      s += fmt::format("; re-run because their spec changed since: {}", id_list(k.rerun_changed));
    s += ".\n";
  }
  return s;
}

std::string not_run_section(const RunResult& r) {
  if (r.completion.not_run.empty()) return "";
  if (r.completion.end == RunEnd::cells_missing) {
    std::string s = "These cells are in no shard that was merged: no result, no verdict.\n\n";
    for (auto& id : r.completion.not_run) s += "- " + code(id) + " — missing\n";
    return s;
  }
  std::string s = "These cells have no result and no verdict";
  s += r.completion.end == RunEnd::harness_failure ? " (the harness failed before they finished)"
                                                   : " (the run was cancelled before they finished)";
  s += fmt::format("; {} runs them and keeps the finished ones.\n\n", resume_command(r));
  for (auto& id : r.completion.not_run) s += "- " + code(id) + "\n";
  return s;
}

}  // namespace harness
