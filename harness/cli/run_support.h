#pragma once
// Running a list of cells and assembling the RunResult (shared by run,
// selftest and repro --minimize).
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/scenario/scenario.h"

namespace harness::cli {

// Spawns `self_exe cell …` per cell under the supervisor; cells that cannot run
// here (CUDA on a CPU box) become skips without a process. With `escalate`, a
// cell that crashed with a CUDA error is re-run with CUDA_LAUNCH_BLOCKING=1 and
// under compute-sanitizer memcheck, and what they show joins its row.
RunResult execute_cells(const Scenario& sc, const std::vector<CellSpec>& cells, const std::string& dir, int jobs,
                        bool resume, const std::string& self_exe, const std::string& scenario_path,
                        bool escalate = true);

// The scenario every command that runs cells starts from: loaded and checked,
// with the environment's NSA_* settings checked and folded into each cell
// (environment.h). On bad input prints every diagnostic and returns nothing
// (the caller exits 2).
std::optional<Scenario> load_scenario_to_run(const std::string& path, const LoadOptions& options = {});

// Is a CUDA device usable from this process?
bool cuda_available();

}  // namespace harness::cli
