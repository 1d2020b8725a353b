// cell_to_scenario_yaml → load_scenario gives the same cell, compared field by
// field over its whole spec (all but its identity: id, axes, file, and where
// environment settings came from), for every cell of every shipped scenario
// and hand-made ones.
#include "harness/scenario/repro_yaml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/scenario/environment.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/settings.h"

namespace harness {
namespace {

LoadOptions repro_load_opts() {
  LoadOptions o;
  o.configs_dir = NSA_CONFIGS_DIR;
  return o;
}

// What the repro of `cell` must read back as: the whole spec, every field,
// with only the cell's identity replaced by the repro's own (a file of one
// cell: id `default`, no axes, its own path). Settings the run took from the
// environment are written out as the file's own, so the repro fails the same
// way without them; where they came from is said in its comment instead.
nlohmann::json expected_back(const CellSpec& cell, const std::string& path) {
  nlohmann::json j = cell;
  j["id"] = "default";
  j["axes"] = nlohmann::json::array();
  j["scenario_file"] = path;
  j["from_environment"] = nlohmann::json::array();
  return j;
}

void expect_round_trip(const CellSpec& cell) {
  SCOPED_TRACE(cell.id);
  std::string yaml = cell_to_scenario_yaml(cell, "repro of a failure\nsecond line");
  EXPECT_EQ(yaml.rfind("# repro of a failure\n# second line\n", 0), 0u) << yaml;
  // As keys: the words may well be in a comment (a cell of seed_matrix.yaml).
  EXPECT_EQ(yaml.find("\nextends:"), std::string::npos);
  EXPECT_EQ(yaml.find("\nmatrix:"), std::string::npos);
  Scenario back;
  try {
    back = load_scenario_text(yaml, "repro.yaml", repro_load_opts());
  } catch (const ScenarioError& e) {
    FAIL() << e.what() << "\n" << yaml;
  }
  ASSERT_EQ(back.cells.size(), 1u);
  const nlohmann::json want = expected_back(cell, "repro.yaml");
  const nlohmann::json got = back.cells[0];
  // The patch from what ran to what the repro reads back: one line per lost setting.
  EXPECT_EQ(got, want) << nlohmann::json::diff(want, got).dump(1) << "\n" << yaml;
}

// Every scenario shipped (configs/ holds model configs, not scenarios): a cell
// kind that only one file has (probes: none, alternate) is covered the day it
// is added, without anyone remembering to list the file here.
std::vector<std::string> shipped_scenarios() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  const fs::path root = NSA_SCENARIOS_DIR;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    if (*e.path().lexically_relative(root).begin() == "configs") continue;
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ReproYaml, RoundTripsEveryShippedCell) {
  const auto files = shipped_scenarios();
  ASSERT_GE(files.size(), 20u);  // the walk found the directory, not an empty one
  for (auto& file : files) {
    SCOPED_TRACE(file);
    for (auto& cell : load_scenario(file, repro_load_opts()).cells) expect_round_trip(cell);
  }
}

TEST(ReproYaml, RoundTripsEverySetting) {
  const std::string text = R"(name: every_setting
description: all of it
device: cuda
model:
  base: smoke
  n_layers: 1
  rope_base: 5e5
  nsa: {phi: mean, window: 64}
train:
  steps: 3
  batch: 1
  seq_len: 96
  lr: 1.5e-4
  warmup_steps: 0
  weight_decay: 0.1
  grad_clip: 0.5
  precision: fp16
  master_weights: false
  seed: 99
  deterministic: true
flags:
  NSA_USE_CUDA_SEL: 0
  NSA_HEARTBEAT_EVERY: 8
  NSA_WINDOW_BWD: cudnn_atomic
  NSA_SELECTED_DQ: atomic
  NSA_FAULT: "causal_leak"
faults: [dead_projection]
probes:
  parity: {every: 4}
  cupti: {every: 2, trace_budget_mb: 12.5}
  syncs: false
  routing: {enabled: false, every: 3}
  checksum: {enabled: false}
observe_alternate: true
watchdog: {stall_timeout_s: 7.5, slow_step_factor: 3}
gates: {min_tok_s: 300, max_branch_share: 0.9, require_loss_falls: true}
expect: {outcome: fail, reason: parity, step: 1, location: "layer 0"}
)";
  Scenario s = load_scenario_text(text, "every.yaml", repro_load_opts());
  ASSERT_EQ(s.cells.size(), 1u);
  const CellSpec& c = s.cells[0];
  EXPECT_EQ(c.probes.at("cupti").options.at("trace_budget_mb"), 12.5);
  EXPECT_FALSE(c.probes.at("routing").enabled);
  EXPECT_EQ(c.probes.at("routing").every, 3);
  EXPECT_FALSE(c.probes.at("checksum").enabled);
  EXPECT_EQ(c.probes.at("checksum").every, kChecksumEveryDefault);  // the default, not a made-up 0
  EXPECT_TRUE(c.observe_alternate);
  EXPECT_TRUE(c.train.deterministic);
  expect_round_trip(c);
}

// The `probes` axis switches probes off but keeps what the file set for them
// (every, options), and `alternate` marks the cell: a repro must carry both.
TEST(ReproYaml, RoundTripsWhatTheProbesAxisSwitchedOff) {
  const std::string text = R"(name: probes_axis
probes:
  parity: {every: 4}
  cupti: {every: 50, trace_budget_mb: 12.5}
  syncs: false
matrix:
  probes: [none, alternate, cupti+syncs]
)";
  Scenario s = load_scenario_text(text, "axis.yaml", repro_load_opts());
  ASSERT_EQ(s.cells.size(), 3u);
  const CellSpec& none = s.cells[0];
  EXPECT_FALSE(none.probes.at("cupti").enabled);
  EXPECT_EQ(none.probes.at("cupti").every, 50);
  EXPECT_EQ(none.probes.at("checksum").every, kChecksumEveryDefault);
  EXPECT_TRUE(s.cells[1].observe_alternate);
  for (auto& cell : s.cells) expect_round_trip(cell);
}

// A probe the file switched off with `false` records every 0; the spec as a
// run stores it in cell.json (and `nsa-harness repro` reads it) comes back
// the same, `false` and all.
TEST(ReproYaml, RoundTripsAProbeSwitchedOffWithoutSampling) {
  Scenario s = load_scenario_text("name: old\nprobes: {parity: false}\n", "old.yaml", repro_load_opts());
  ASSERT_EQ(s.cells.size(), 1u);
  EXPECT_EQ(s.cells[0].probes.at("parity").every, 0);
  const CellSpec stored = nlohmann::json(s.cells[0]).get<CellSpec>();
  expect_round_trip(stored);
}

// Settings taken from the environment are written out as the repro's own
// (flags, faults): the same cell, minus the record of where they came from.
TEST(ReproYaml, WritesTheEnvironmentsSettingsOut) {
  Scenario s = load_scenario_text("name: env\nflags: {NSA_PREFILL_BATCHED: 1}\n", "env.yaml", repro_load_opts());
  ASSERT_EQ(s.cells.size(), 1u);
  CellSpec cell = s.cells[0];
  apply_environment(read_environment_settings({"NSA_STOPGRAD_GATES=true", "NSA_WINDOW_BWD=cudnn",
                                               "NSA_HEARTBEAT_EVERY=16", "NSA_FAULT=causal_leak"}),
                    cell);
  ASSERT_EQ(cell.from_environment.size(), 4u);
  expect_round_trip(cell);
}

}  // namespace
}  // namespace harness
