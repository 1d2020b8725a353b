#pragma once
// What every command that runs cells shares (run, selftest, selftest
// --mutations): the scenario loaded with the environment folded in, and the
// libtorch-side facts (CUDA, platform) of the machine running the matrix.
// In harness_run_host, apart from harness_run, so the orchestration itself
// (execute.h) and its tests stay free of libtorch.
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/run/execute.h"
#include "harness/scenario/scenario.h"

namespace harness::run {

// ExecuteOptions for a run into `dir` spawning `self_exe cell …` children,
// with CUDA availability and (with CUPTI) the NVTX injection set.
ExecuteOptions execute_options(const std::string& dir, int jobs, const std::string& self_exe,
                                    const std::string& scenario_path);

// execute_cells plus the start time and the platform description.
RunResult execute_here(const Scenario& sc, const std::vector<CellSpec>& cells, const ExecuteOptions& options);

// The scenario every command that runs cells starts from: loaded and checked,
// with the environment's NSA_* settings checked and folded into each cell
// (environment.h). On bad input prints every diagnostic and returns nothing
// (the caller exits 2).
std::optional<Scenario> load_scenario_to_run(const std::string& path, const LoadOptions& options = {});

// Is a CUDA device usable from this process?
bool cuda_available();

}  // namespace harness::run
