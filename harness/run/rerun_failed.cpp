#include "harness/run/rerun_failed.h"

#include <filesystem>

#include "harness/run/run_dir.h"

namespace harness::run {

RerunPlan plan_rerun_failed(const RunResult& previous, const std::string& given_scenario) {
  RerunPlan plan;
  plan.scenario_path = given_scenario;
  if (plan.scenario_path.empty() && previous.scenario.is_object() && previous.scenario.contains("file") &&
      previous.scenario["file"].is_string())
    plan.scenario_path = previous.scenario["file"].get<std::string>();
  if (plan.scenario_path.empty())
    throw InputError("the previous run records no scenario file: name the scenario to re-run");
  // A skip is no pass either: the cell has no verdict yet (a machine with a GPU may give it one).
  for (const auto& c : previous.cells) (c.outcome == Outcome::pass ? plan.kept : plan.rerun).insert(c.id);
  // Cells that never finished (a cancelled run) are in no cell list: they have no stored result to keep.
  for (const auto& id : previous.completion.not_run) plan.rerun.insert(id);
  return plan;
}

void carry_kept_cells(const RerunPlan& plan, const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::weakly_canonical(from, ec) == fs::weakly_canonical(to, ec)) return;
  for (const auto& id : plan.kept) copy_cell_dir(from, to, id);
}

}  // namespace harness::run
