#pragma once
// NSA_* variables in the harness's environment are settings like a scenario's
// `flags:` and `faults:` — they change what every child runs (children inherit
// the environment). So they are read once, checked before any cell runs (an
// unknown name or a bad value is a usage error with a did-you-mean, never a
// model verdict), and folded into each cell's spec, so that results.json, the
// report and a repro all carry them and the repro fails the same way without
// the environment.
//
// Precedence is the child's: a value the scenario (or its matrix/include) set
// wins over the environment's; faults from NSA_FAULT join the scenario's.
#include <map>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/scenario/diagnostic.h"

namespace harness {

struct EnvironmentSettings {
  std::map<std::string, std::string> flags;  // NSA_* → value, NSA_FAULT excluded
  std::vector<std::string> faults;           // from NSA_FAULT
  bool empty() const { return flags.empty() && faults.empty(); }
};

// Every NSA_* variable of `env` (KEY=VALUE strings; NSA_HARNESS_* are the
// harness's own and skipped). Throws ScenarioError, one diagnostic per bad
// variable, file "environment".
EnvironmentSettings read_environment_settings(const std::vector<std::string>& env);
EnvironmentSettings read_environment_settings();  // this process's environment

// Adds the environment's settings to a cell and records their names in
// cell.from_environment.
void apply_environment(const EnvironmentSettings& env, CellSpec& cell);

}  // namespace harness
