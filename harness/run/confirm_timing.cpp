#include "harness/run/confirm_timing.h"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "harness/analysis/judgement.h"
#include "harness/core/atomic_file.h"

namespace harness::run {

Recheck recheck_for(const CellResult& r) {
  if (r.confirmation) return Recheck::none;  // confirmed before (a resumed run)
  if (gpu_shared(r.gpu_sharers) && judge(r).kind == Judgement::Kind::fail) return Recheck::shared_gpu;
  if (fails_on_timing_only(r)) return Recheck::timing;
  return Recheck::none;
}

CellResult settle_recheck(CellResult first, CellResult again, Recheck why, const std::string& rerun_dir) {
  const Judgement j = judge(first), j2 = judge(again);
  Confirmation k;
  k.first_reason = j.reason;
  k.first_title = j.deciding ? j.deciding->title : j.reason;
  k.rerun_reason = j2.kind == Judgement::Kind::pass ? "" : j2.reason;
  k.repeated = j2.reason == j.reason || (why == Recheck::timing && fails_on_timing_only(again));
  k.rerun_dir = rerun_dir;
  again.spec_hash = first.spec_hash;
  // Timing: a re-run that failed too (on time or otherwise) leaves the first run standing.
  if (why == Recheck::timing && (k.repeated || j2.kind != Judgement::Kind::pass)) {
    first.confirmation = k;
    return first;
  }
  if (why == Recheck::shared_gpu && k.repeated) {
    again.confirmation = k;  // the same failure alone on the GPU: the model's, measured without neighbours
    return again;
  }
  Finding note;
  note.severity = Severity::info;
  if (why == Recheck::timing) {
    note.code = "timing_not_repeated";
    note.title = "first run: " + k.first_title + " — did not repeat on a re-run";
    note.detail = "The first run failed on time alone (" + j.reason +
                  "); the same cell re-run at once passed, so the slowness was the machine's, not the model's. "
                  "The re-run's result is the cell's; the first run is in " + first.id + "'s directory.";
  } else {
    note.code = "shared_gpu_not_repeated";
    note.title = "first run: " + k.first_title + " — with " + std::to_string(first.gpu_sharers - 1) +
                 " other cell(s) on its GPU; re-run with the GPU to itself: " +
                 (k.rerun_reason.empty() ? std::string("pass") : k.rerun_reason);
    note.detail = fmt::format(
        "The first run failed ({}) while up to {} cells computed on its GPU at once (run --cells-per-gpu): memory "
        "they held and time they took are theirs, not this cell's. The cell was re-run with the GPU to itself, and "
        "that result is the cell's; the first run is in {}'s directory.",
        j.reason, first.gpu_sharers, first.id);
  }
  note.evidence = {{"first_run_steps_ms", nlohmann::json::array()}, {"first_run_gpu_sharers", first.gpu_sharers}};
  for (auto& s : first.steps) note.evidence["first_run_steps_ms"].push_back(s.step_ms);
  again.findings.push_back(note);
  again.confirmation = k;
  again.artifacts.insert(again.artifacts.end(), first.artifacts.begin(), first.artifacts.end());
  return again;
}

std::optional<std::string> confirm_timing_findings(std::vector<std::optional<CellResult>>& results,
                                                   const std::vector<CellSpec>& cells, const std::string& run_dir,
                                                   const CellDir& cell_dir, const RunAttempt& run_attempt,
                                                   const std::function<bool()>& cancelled) {
  auto stop = [&] { return cancelled && cancelled(); };
  for (size_t i = 0; i < results.size() && i < cells.size(); ++i) {
    if (!results[i]) continue;
    const Recheck why = recheck_for(*results[i]);
    if (why == Recheck::none) continue;
    if (stop()) break;
    CellResult& first = *results[i];
    const std::string dir = cell_dir(first.id) + "/confirm";
    std::cerr << "nsa-harness: " << first.id << ": " << judge(first).reason
              << (why == Recheck::shared_gpu ? " on a shared GPU — re-running with the GPU to itself\n"
                                             : " — re-running once to confirm\n");
    supervisor::EscalationAttempt again_spec;
    again_spec.cell = cells[i];
    CellResult again = run_attempt(again_spec, dir);
    if (stop()) {
      // Unconfirmed, the finding is no verdict: the cell counts as not run.
      std::error_code ec;
      std::filesystem::remove(cell_dir(first.id) + "/result.json", ec);
      results[i].reset();
      break;
    }
    std::error_code ec;
    first = settle_recheck(std::move(first), std::move(again), why,
                           std::filesystem::relative(dir, run_dir, ec).string());
    try {
      write_file_atomic(cell_dir(first.id) + "/result.json", nlohmann::json(first).dump(2) + "\n");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace harness::run
