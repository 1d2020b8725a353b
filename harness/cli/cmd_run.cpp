// `nsa-harness run`: scenario → cells → one supervised child per cell →
// analysis → reports. Prints the decision and where the report is.
#include <ATen/ATen.h>
#include <fmt/core.h>

#include <filesystem>
#include <iostream>

#include "harness/analysis/analyze.h"
#include "harness/cli/commands.h"
#include "harness/cli/platform.h"
#include "harness/cli/run_support.h"
#include "harness/report/render_all.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/select.h"
#include "harness/supervisor/runner.h"

namespace harness::cli {

int cmd_run(const RunOptions& o) {
  namespace fs = std::filesystem;
  std::string path = o.scenario.empty() ? default_scenario_path() : o.scenario;
  LoadOptions lo;
  if (!o.device.empty()) lo.device_override = o.device;
  auto loaded = load_scenario_to_run(path, lo);
  if (!loaded) return kExitInvalidInput;
  Scenario& sc = *loaded;
  for (auto& w : sc.warnings) fmt::print(stderr, "{}: warning: {}\n", path, w);
  auto cells = o.only.empty() ? sc.cells : select_cells(sc.cells, o.only);
  if (cells.empty()) {
    fmt::print(stderr, "{}: no cell matches --only '{}'\n", path, o.only);
    return kExitInvalidInput;
  }
  std::string dir = o.out.empty() ? "runs/" + sc.name + "-" + now_compact() : o.out;
  fs::create_directories(dir);
  fmt::print(stderr, "nsa-harness: {} — {} cell(s) → {}\n", sc.name, cells.size(), dir);

  RunResult run = execute_cells(sc, cells, dir, o.jobs, o.resume, o.self_exe, path, o.escalate);
  run.command_line = o.command_line;
  analyze(run);
  render_all(run, dir);
  fmt::print("decision: {}\nreport: {}/report.md\n", to_string(run.decision), dir);
  return exit_code_for(run.decision);
}

}  // namespace harness::cli
