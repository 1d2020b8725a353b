// `nsa-harness validate FILE...`: exit 0, or 2 with every problem as
// file:line:col: key.path: message (plus the line and a caret).
#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/environment.h"
#include "harness/scenario/scenario.h"

namespace harness::cli {

int cmd_validate(const std::vector<std::string>& files) {
  int rc = 0;
  // A run would refuse these too (environment.h): say so now.
  try {
    auto env = read_environment_settings();
    for (auto& [k, v] : env.flags) fmt::print(stderr, "environment: note: {}={} applies to every cell\n", k, v);
    for (auto& f : env.faults) fmt::print(stderr, "environment: note: fault {} (NSA_FAULT) applies to every cell\n", f);
  } catch (const ScenarioError& e) {
    for (auto& d : e.diagnostics) fmt::print(stderr, "{}", format_diagnostic(d));
    rc = kExitInvalidInput;
  }
  for (auto& f : files) {
    try {
      Scenario s = load_scenario(f);
      for (auto& w : s.warnings) fmt::print(stderr, "{}: warning: {}\n", f, w);
      fmt::print("{}: ok ({} cell{}, hash {})\n", f, s.cells.size(), s.cells.size() == 1 ? "" : "s", s.hash);
    } catch (const ScenarioError& e) {
      for (auto& d : e.diagnostics) fmt::print(stderr, "{}", format_diagnostic(d));
      rc = kExitInvalidInput;
    }
  }
  return rc;
}

}  // namespace harness::cli
