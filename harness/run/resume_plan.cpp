#include "harness/run/resume_plan.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/protocol/events.h"
#include "harness/run/spec_hash.h"
#include "harness/supervisor/runner.h"

namespace harness::run {

ResumeDecision decide_resume(const CellSpec& cell, const std::string& spec_hash,
                             const std::optional<CellResult>& stored) {
  ResumeDecision d;
  // Another id in this cell's directory is a different cell whose name maps here: ignore it.
  if (!stored || stored->id != cell.id) return d;
  if (stored->spec_hash.empty()) {
    // Written before results carried a hash: nothing proves it is this spec's.
    d.action = ResumeAction::rerun_changed;
    d.why = "its stored result records no spec hash";
    return d;
  }
  if (stored->spec_hash != spec_hash) {
    d.action = ResumeAction::rerun_changed;
    d.why = fmt::format("its spec changed since its result (hash {} → {})", stored->spec_hash, spec_hash);
    return d;
  }
  d.action = ResumeAction::reuse;
  d.reused = stored;
  return d;
}

int ResumePlan::reused() const {
  int n = 0;
  for (auto& d : decisions) n += d.action == ResumeAction::reuse;
  return n;
}

std::vector<std::string> ResumePlan::rerun_changed(const std::vector<CellSpec>& cells) const {
  std::vector<std::string> ids;
  for (size_t i = 0; i < decisions.size() && i < cells.size(); ++i)
    if (decisions[i].action == ResumeAction::rerun_changed) ids.push_back(cells[i].id);
  return ids;
}

ResumePlan plan_resume(const std::vector<CellSpec>& cells, const std::string& run_dir, bool resume,
                       const std::set<std::string>& rerun) {
  namespace fs = std::filesystem;
  ResumePlan plan;
  for (const auto& c : cells) {
    if (!resume || rerun.count(c.id)) {
      plan.decisions.emplace_back();
      continue;
    }
    auto path = fs::path(run_dir) / "cells" / supervisor::cell_dir_name(c.id) / protocol::kResultFile;
    plan.decisions.push_back(decide_resume(c, cell_spec_hash(c), supervisor::load_result(path.string())));
  }
  return plan;
}

}  // namespace harness::run
