#pragma once
// Reads a merged scenario's settings (everything except `matrix` and
// `extends`) into the draft every cell starts from.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario/checker.h"
#include "harness/scenario/settings.h"

namespace harness {

struct ScenarioHeader {
  std::string name;
  std::string description;
};

// Top-level keys of a scenario file, in the order the format doc lists them.
const std::vector<std::string>& top_level_keys();

void parse_settings(const YNode& root, Checker& check, ModelLibrary& models, CellDraft& base,
                    ScenarioHeader& header);

// {outcome, reason?, step?, location?} → JSON with the keys given.
std::optional<nlohmann::json> parse_expect(const YNode& node, const std::string& path, Checker& check);

}  // namespace harness
