#include "harness/run/confirm_timing.h"

#include <filesystem>
#include <iostream>

#include "harness/analysis/judgement.h"
#include "harness/core/atomic_file.h"

namespace harness::run {

std::optional<std::string> confirm_timing_findings(std::vector<std::optional<CellResult>>& results,
                                                   const std::vector<CellSpec>& cells, const std::string& run_dir,
                                                   const CellDir& cell_dir, const RunAttempt& run_attempt,
                                                   const std::function<bool()>& cancelled) {
  auto stop = [&] { return cancelled && cancelled(); };
  for (size_t i = 0; i < results.size() && i < cells.size(); ++i) {
    if (!results[i] || results[i]->confirmation || !fails_on_timing_only(*results[i])) continue;
    if (stop()) break;
    CellResult& first = *results[i];
    const Judgement j = judge(first);
    const std::string dir = cell_dir(first.id) + "/confirm";
    std::cerr << "nsa-harness: " << first.id << ": " << j.reason << " — re-running once to confirm\n";
    supervisor::EscalationAttempt again_spec;
    again_spec.cell = cells[i];
    CellResult again = run_attempt(again_spec, dir);
    if (stop()) {
      // Unconfirmed, the timing finding is no verdict: the cell counts as not run.
      std::error_code ec;
      std::filesystem::remove(cell_dir(first.id) + "/result.json", ec);
      results[i].reset();
      break;
    }
    again.spec_hash = first.spec_hash;
    std::error_code ec;
    Confirmation k;
    k.first_reason = j.reason;
    k.first_title = j.deciding ? j.deciding->title : j.reason;
    const Judgement j2 = judge(again);
    k.rerun_reason = j2.kind == Judgement::Kind::pass ? "" : j2.reason;
    k.repeated = fails_on_timing_only(again) || j2.reason == j.reason;
    k.rerun_dir = std::filesystem::relative(dir, run_dir, ec).string();
    if (k.repeated || j2.kind != Judgement::Kind::pass) {
      first.confirmation = k;  // it repeated (or the re-run failed otherwise): the first run stands
    } else {
      Finding note;
      note.code = "timing_not_repeated";
      note.severity = Severity::info;
      note.title = "first run: " + k.first_title + " — did not repeat on a re-run";
      note.detail = "The first run failed on time alone (" + j.reason +
                    "); the same cell re-run at once passed, so the slowness was the machine's, not the model's. "
                    "The re-run's result is the cell's; the first run is in " + first.id + "'s directory.";
      note.evidence = {{"first_run_steps_ms", nlohmann::json::array()}};
      for (auto& s : first.steps) note.evidence["first_run_steps_ms"].push_back(s.step_ms);
      again.findings.push_back(note);
      again.confirmation = k;
      again.artifacts.insert(again.artifacts.end(), first.artifacts.begin(), first.artifacts.end());
      first = std::move(again);
    }
    try {
      write_file_atomic(cell_dir(first.id) + "/result.json", nlohmann::json(first).dump(2) + "\n");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace harness::run
