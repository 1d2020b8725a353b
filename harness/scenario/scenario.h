#pragma once
// Scenario files → a validated Scenario and its cells (docs/scenario-format.md).
//
//   Scenario s = harness::load_scenario("scenarios/default.yaml");
//   for (const CellSpec& cell : harness::select_cells(s.cells, "precision=bf16*")) ...
//
// load_scenario reads the file, follows `extends`, checks everything and
// throws ScenarioError with every problem it found (never only the first).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/cell_spec.h"
#include "harness/scenario/diagnostic.h"

namespace harness {

struct LoadOptions {
  std::string configs_dir;                     // empty → nsa::default_configs_dir()
  std::optional<std::string> device_override;  // `--device cpu|cuda|auto`
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  std::string hash;  // 16 hex digits over the resolved content and every cell (not the file's path)
  std::vector<CellSpec> cells;
  std::vector<std::string> warnings;
  std::vector<std::string> axis_names;  // original axes, then keys added by include
  nlohmann::json resolved;  // the merged scenario (extends applied) as JSON, for results.json
};

Scenario load_scenario(const std::string& path, const LoadOptions& options = {});

// The same from text; `path` names it in diagnostics and anchors `extends`.
Scenario load_scenario_text(const std::string& text, const std::string& path, const LoadOptions& options = {});

}  // namespace harness
