// `nsa-harness validate FILE...`: exit 0, or 2 with every problem as
// file:line:col: key.path: message (plus the line and a caret).
#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"

namespace harness::cli {

int cmd_validate(const std::vector<std::string>& files) {
  int rc = 0;
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
