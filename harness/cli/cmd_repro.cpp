// `nsa-harness repro DIR --cell ID [-o FILE]`: a standalone scenario that
// reproduces one cell of a finished run (every setting explicit).
#include <fmt/core.h>

#include <filesystem>
#include <fstream>

#include "harness/cli/commands.h"
#include "harness/run/minimize.h"
#include "harness/run/run_dir.h"
#include "harness/core/atomic_file.h"
#include "harness/core/text.h"
#include "harness/report/render_all.h"
#include "harness/scenario/repro_yaml.h"
#include "harness/supervisor/runner.h"

namespace harness::cli {
using run::minimize_cell;
using run::MinimizeResult;

CellSpec load_cell_spec(const std::string& run_dir, const std::string& id) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(run_dir) / "cells" / supervisor::cell_dir_name(id) / "cell.json";
  std::ifstream in(p);
  if (!in) throw std::runtime_error("no cell '" + id + "' in " + run_dir + " (looked for " + p.string() + ")");
  return nlohmann::json::parse(in).get<CellSpec>();
}

int cmd_repro(const std::string& dir, const std::string& cell, bool minimize, const std::string& out,
              const std::string& self_exe) {
  const RunResult run = run::load_run_dir(dir);
  const CellResult* result = &run::find_cell_or_throw(run, dir, cell);
  CellSpec spec = load_cell_spec(dir, cell);
  std::string comment = "Reproduces cell '" + cell + "' of " + dir + " (outcome " + std::string(to_string(result->outcome)) +
                        (result->reason ? ", reason " + *result->reason : "") + ").";
  if (!spec.from_environment.empty()) {
    comment += "\nSettings the run took from its environment, written out below so that this file fails the same "
               "way without them:";
    for (auto& s : spec.from_environment) comment += " " + s;
    comment += ".";
  }
  if (minimize) {
    MinimizeResult m = minimize_cell(spec, *result, self_exe, dir + "/minimize");
    spec = m.cell;
    comment += " Minimized in " + std::to_string(m.probes) + " probe runs (" + std::to_string(m.cached) +
               " answered from cache); signature: " + m.signature + ".";
    fmt::print(stderr, "minimized in {} probes ({} cached), signature {}\n", m.probes, m.cached, m.signature);
  }
  std::string yaml = cell_to_scenario_yaml(spec, comment);
  if (out.empty()) {
    fmt::print("{}", yaml);
  } else {
    write_file_atomic(out, yaml);  // throws on failure: exit 4 with the cause
    fmt::print(stderr, "wrote {}\nrun it: nsa-harness run {}\n", out, shell_word(out));
  }
  return 0;
}

}  // namespace harness::cli
