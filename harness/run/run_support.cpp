#include "harness/run/run_support.h"

#include <ATen/ATen.h>

#include <iostream>

#include "harness/run/platform.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/environment.h"
#ifdef NSA_WITH_CUPTI
#include "harness/trace/cupti_tracer.h"
#endif

namespace harness::run {

std::optional<Scenario> load_scenario_to_run(const std::string& path, const LoadOptions& options) {
  try {
    Scenario sc = load_scenario(path, options);
    const EnvironmentSettings env = read_environment_settings();
    for (auto& c : sc.cells) apply_environment(env, c);
    return sc;
  } catch (const ScenarioError& e) {
    for (auto& d : e.diagnostics) std::cerr << format_diagnostic(d);
    return std::nullopt;
  }
}

bool cuda_available() {
  static const bool have = at::hasCUDA();
  return have;
}

ExecuteOptions execute_options(const std::string& dir, int jobs, const std::string& self_exe,
                                    const std::string& scenario_path) {
  ExecuteOptions o;
  o.run_dir = dir;
  o.jobs = jobs;
  o.have_cuda = cuda_available();
  o.self_exe = self_exe;
  o.scenario_path = scenario_path;
  o.log = &std::cerr;
#ifdef NSA_WITH_CUPTI
  // CUPTI sees NVTX ranges only when the injection library is named before the
  // child's first NVTX call.
  if (auto lib = trace::cupti_library_path(); !lib.empty()) o.env[trace::kNvtxInjectionEnv] = lib;
#endif
  return o;
}

RunResult execute_here(const Scenario& sc, const std::vector<CellSpec>& cells, const ExecuteOptions& o) {
  const std::string started = now_iso8601();
  RunResult run = execute_cells(sc, cells, o);
  run.started_at = started;
  run.platform = detect_platform();
  return run;
}

}  // namespace harness::run
