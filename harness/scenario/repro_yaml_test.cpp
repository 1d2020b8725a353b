// cell_to_scenario_yaml → load_scenario gives the same cell (all but id, axes
// and file), for every cell of the shipped scenarios and a hand-made one.
#include "harness/scenario/repro_yaml.h"

#include <gtest/gtest.h>

#include "harness/scenario/scenario.h"

namespace harness {
namespace {

LoadOptions opts() {
  LoadOptions o;
  o.configs_dir = NSA_CONFIGS_DIR;
  return o;
}

nlohmann::json comparable(const CellSpec& c) {
  nlohmann::json j = c;
  j.erase("id");
  j.erase("axes");
  j.erase("scenario_file");
  return j;
}

void expect_round_trip(const CellSpec& cell) {
  SCOPED_TRACE(cell.id);
  std::string yaml = cell_to_scenario_yaml(cell, "repro of a failure\nsecond line");
  EXPECT_EQ(yaml.rfind("# repro of a failure\n# second line\n", 0), 0u) << yaml;
  EXPECT_EQ(yaml.find("extends"), std::string::npos);
  EXPECT_EQ(yaml.find("matrix"), std::string::npos);
  Scenario back;
  try {
    back = load_scenario_text(yaml, "repro.yaml", opts());
  } catch (const ScenarioError& e) {
    FAIL() << e.what() << "\n" << yaml;
  }
  ASSERT_EQ(back.cells.size(), 1u);
  EXPECT_EQ(back.cells[0].id, "default");
  EXPECT_EQ(comparable(back.cells[0]).dump(2), comparable(cell).dump(2)) << yaml;
}

TEST(ReproYaml, RoundTripsEveryShippedCell) {
  for (auto file : {"/default.yaml", "/examples/prefill_paths.yaml", "/examples/fault_selftest.yaml"})
    for (auto& cell : load_scenario(std::string(NSA_SCENARIOS_DIR) + file, opts()).cells) expect_round_trip(cell);
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
flags:
  NSA_USE_CUDA_SEL: 0
  NSA_HEARTBEAT_EVERY: 8
  NSA_WINDOW_BWD: cudnn_atomic
  NSA_FAULT: "causal_leak"
faults: [dead_projection]
probes:
  parity: {every: 4}
  cupti: {every: 2, trace_budget_mb: 12.5}
  syncs: false
watchdog: {stall_timeout_s: 7.5, slow_step_factor: 3}
gates: {min_tok_s: 300, max_branch_share: 0.9, require_loss_falls: true}
expect: {outcome: fail, reason: parity, step: 1, location: "layer 0"}
)";
  Scenario s = load_scenario_text(text, "every.yaml", opts());
  ASSERT_EQ(s.cells.size(), 1u);
  EXPECT_EQ(s.cells[0].probes.at("cupti").options.at("trace_budget_mb"), 12.5);
  expect_round_trip(s.cells[0]);
}

}  // namespace
}  // namespace harness
