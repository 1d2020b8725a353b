// The shipped scenarios load into the cells one derives by hand from the
// format doc; hashes are stable; count limits hold.
#include "harness/scenario/scenario.h"

#include <gtest/gtest.h>

#include "harness/scenario/matrix.h"
#include "harness/scenario/settings.h"

namespace harness {
namespace {

const std::string S = NSA_SCENARIOS_DIR;

LoadOptions opts() {
  LoadOptions o;
  o.configs_dir = NSA_CONFIGS_DIR;
  return o;
}

std::vector<std::string> ids(const Scenario& s) {
  std::vector<std::string> out;
  for (auto& c : s.cells) out.push_back(c.id);
  return out;
}

TEST(Scenario, DefaultScenarioIsPrefillTimesPrecision) {
  Scenario s = load_scenario(S + "/default.yaml", opts());
  EXPECT_EQ(s.name, "default");
  EXPECT_EQ(ids(s), (std::vector<std::string>{
                        "prefill=sequential,precision=fp32", "prefill=sequential,precision=bf16",
                        "prefill=batched,precision=fp32", "prefill=batched,precision=bf16"}));
  EXPECT_EQ(s.axis_names, (std::vector<std::string>{"prefill", "precision"}));
  const std::vector<std::string> batched = {"0", "0", "1", "1"};
  const std::vector<std::string> precision = {"fp32", "bf16", "fp32", "bf16"};
  for (size_t i = 0; i < s.cells.size(); ++i) {
    const CellSpec& c = s.cells[i];
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.flags.at("NSA_PREFILL_BATCHED"), batched[i]);
    EXPECT_EQ(c.train.precision, precision[i]);
    EXPECT_EQ(c.train.steps, 6);
    EXPECT_EQ(c.train.batch, 2);
    EXPECT_EQ(c.train.seq_len, 100);
    EXPECT_EQ(c.device, "auto");
    EXPECT_EQ(c.model_name, "tiny");
    EXPECT_EQ(c.model.d_model, 64);
    EXPECT_EQ(c.probes.size(), 14u);
    for (auto& [name, p] : c.probes) {
      EXPECT_TRUE(p.enabled) << name;
      // Every step, but the checksum (a host sync over every parameter) samples.
      EXPECT_EQ(p.every, name == "checksum" ? kChecksumEveryDefault : 1) << name;
    }
    EXPECT_FALSE(c.expect.has_value());
  }
  EXPECT_TRUE(s.warnings.empty());
}

// window_bwd.yaml: nsa_vs_dense's shape, the NSA cell under each window
// backward and the dense cell once (the flag does not touch dense attention).
TEST(Scenario, WindowBackwardIsTheNsaCellTwiceAndDenseOnce) {
  Scenario s = load_scenario(S + "/window_bwd.yaml", opts());
  EXPECT_EQ(ids(s), (std::vector<std::string>{"attention=nsa,probes=none,NSA_WINDOW_BWD=ours",
                                              "attention=nsa,probes=none,NSA_WINDOW_BWD=cudnn_atomic",
                                              "attention=dense,probes=none,NSA_WINDOW_BWD=ours"}));
  const std::vector<std::string> attention = {"nsa", "nsa", "dense"}, backward = {"ours", "cudnn_atomic", "ours"};
  for (size_t i = 0; i < s.cells.size() && i < 3; ++i) {
    const CellSpec& c = s.cells[i];
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.model.attention, attention[i]);
    EXPECT_EQ(c.flags.at("NSA_WINDOW_BWD"), backward[i]);
    EXPECT_EQ(c.model_name, "m7c_125m");
    EXPECT_EQ(c.train.seq_len, 2048);
    EXPECT_EQ(c.train.batch, 8);
    EXPECT_EQ(c.train.precision, "bf16");
    EXPECT_EQ(c.device, "cuda");
    for (auto& [name, p] : c.probes) EXPECT_FALSE(p.enabled) << name;
  }
}

// backward_choices.yaml: the same shape, the NSA cell under each window
// backward crossed with each selected dq, and the dense cell once (neither
// flag touches dense attention).
TEST(Scenario, BackwardChoicesAreFourNsaCellsAndDenseOnce) {
  Scenario s = load_scenario(S + "/backward_choices.yaml", opts());
  const std::string p = "probes=none,NSA_WINDOW_BWD=";
  EXPECT_EQ(ids(s), (std::vector<std::string>{"attention=nsa," + p + "ours,NSA_SELECTED_DQ=kernel",
                                              "attention=nsa," + p + "ours,NSA_SELECTED_DQ=atomic",
                                              "attention=nsa," + p + "cudnn_atomic,NSA_SELECTED_DQ=kernel",
                                              "attention=nsa," + p + "cudnn_atomic,NSA_SELECTED_DQ=atomic",
                                              "attention=dense," + p + "ours,NSA_SELECTED_DQ=kernel"}));
  const std::vector<std::string> attention = {"nsa", "nsa", "nsa", "nsa", "dense"},
                                 window = {"ours", "ours", "cudnn_atomic", "cudnn_atomic", "ours"},
                                 dq = {"kernel", "atomic", "kernel", "atomic", "kernel"};
  for (size_t i = 0; i < s.cells.size() && i < 5; ++i) {
    const CellSpec& c = s.cells[i];
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.model.attention, attention[i]);
    EXPECT_EQ(c.flags.at("NSA_WINDOW_BWD"), window[i]);
    EXPECT_EQ(c.flags.at("NSA_SELECTED_DQ"), dq[i]);
    EXPECT_EQ(c.model_name, "m7c_125m");
    EXPECT_EQ(c.model.nsa.sel_block % 64, 0);  // where the atomic dq applies
    EXPECT_EQ(c.train.seq_len, 2048);
    EXPECT_EQ(c.train.batch, 8);
    EXPECT_EQ(c.train.precision, "bf16");
    EXPECT_EQ(c.device, "cuda");
    for (auto& [name, p] : c.probes) EXPECT_FALSE(p.enabled) << name;
  }
}

TEST(Scenario, ExtendsExcludeAndInclude) {
  Scenario s = load_scenario(S + "/examples/prefill_paths.yaml", opts());
  // 2 × 2 × 2 = 8, minus sequential at 128 (2 cells), + one added cell.
  EXPECT_EQ(ids(s), (std::vector<std::string>{
                        "prefill=sequential,seq_len=64,precision=fp32",
                        "prefill=sequential,seq_len=64,precision=bf16",
                        "prefill=batched,seq_len=64,precision=fp32,NSA_USE_SEL_MASK=1",
                        "prefill=batched,seq_len=64,precision=bf16,NSA_USE_SEL_MASK=1",
                        "prefill=batched,seq_len=128,precision=fp32,NSA_USE_SEL_MASK=1",
                        "prefill=batched,seq_len=128,precision=bf16,NSA_USE_SEL_MASK=1",
                        "prefill=batched,seq_len=256,precision=fp16",
                    }));
  EXPECT_EQ(s.axis_names, (std::vector<std::string>{"prefill", "seq_len", "precision", "NSA_USE_SEL_MASK"}));
  for (auto& c : s.cells) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.train.steps, 3);        // this file
    EXPECT_EQ(c.train.seed, 7u);        // the base
    EXPECT_EQ(c.train.batch, 2);        // the base
    EXPECT_EQ(c.device, "cpu");
    EXPECT_EQ(c.flags.at("NSA_HEARTBEAT_EVERY"), "16");
    EXPECT_FALSE(c.probes.at("cupti").enabled);
    EXPECT_EQ(c.probes.at("learning").every, 2);
    EXPECT_EQ(c.watchdog.stall_timeout_s, 20);
    EXPECT_EQ(c.watchdog.step_timeout_s, 120);  // default
  }
  EXPECT_EQ(s.cells[2].flags.at("NSA_USE_SEL_MASK"), "1");
  EXPECT_EQ(s.cells[4].train.seq_len, 128);
  EXPECT_EQ(s.cells[6].train.seq_len, 256);
  EXPECT_EQ(s.cells[6].train.precision, "fp16");
  EXPECT_EQ(s.cells[6].flags.count("NSA_USE_SEL_MASK"), 0u);
  EXPECT_EQ(s.cells[0].flags.at("NSA_PREFILL_BATCHED"), "0");
  EXPECT_EQ(s.resolved.at("train").at("steps"), 3);
  EXPECT_EQ(s.resolved.at("train").at("seed"), 7);
  EXPECT_EQ(s.resolved.at("name"), "prefill_paths");
  EXPECT_FALSE(s.resolved.contains("extends"));
}

TEST(Scenario, IncludeSetsExpectationsPerCell) {
  Scenario s = load_scenario(S + "/examples/fault_selftest.yaml", opts());
  ASSERT_EQ(ids(s), (std::vector<std::string>{"fault=none", "fault=causal_leak", "fault=empty_row_nan",
                                              "fault=topk_overflow,seq_len=32"}));
  using nlohmann::json;
  EXPECT_EQ(*s.cells[0].expect, (json{{"outcome", "pass"}}));
  EXPECT_EQ(*s.cells[1].expect, (json{{"outcome", "fail"}, {"reason", "causality"}}));
  EXPECT_EQ(*s.cells[2].expect, (json{{"outcome", "fail"}, {"reason", "non_finite"}}));
  EXPECT_EQ(*s.cells[3].expect, (json{{"outcome", "error"}, {"reason", "index_out_of_range"}}));
  EXPECT_TRUE(s.cells[0].faults.empty());
  EXPECT_EQ(s.cells[1].faults, (std::vector<std::string>{"causal_leak"}));
  EXPECT_EQ(s.cells[3].faults, (std::vector<std::string>{"topk_overflow"}));
  EXPECT_EQ(s.cells[3].train.seq_len, 32);
  EXPECT_FALSE(s.cells[0].probes.at("learning").enabled);
}

TEST(Scenario, DeviceOverrideWinsOverTheFile) {
  LoadOptions o = opts();
  o.device_override = "cpu";
  for (auto& c : load_scenario(S + "/default.yaml", o).cells) EXPECT_EQ(c.device, "cpu");
}

TEST(Scenario, HashIsStableAndFollowsContentNotPath) {
  const std::string text = "name: h\ntrain: {steps: 2}\nmatrix: {precision: [fp32, bf16]}\n";
  Scenario a = load_scenario_text(text, "a/one.yaml", opts());
  Scenario b = load_scenario_text(text, "b/two.yaml", opts());
  Scenario c = load_scenario_text("name: h\ntrain: {steps: 3}\nmatrix: {precision: [fp32, bf16]}\n", "a/one.yaml",
                                  opts());
  EXPECT_EQ(a.hash.size(), 16u);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
  EXPECT_EQ(a.hash, load_scenario_text(text, "a/one.yaml", opts()).hash);
}

std::string axis(int n) {
  std::string v;
  for (int i = 1; i <= n; ++i) v += (i > 1 ? ", " : "") + std::to_string(i);
  return "[" + v + "]";
}

TEST(Scenario, WarnsAbove64CellsAndRefusesAbove256) {
  Scenario s = load_scenario_text("name: big\nmatrix:\n  seq_len: " + axis(9) + "\n  steps: " + axis(8) + "\n",
                                  "big.yaml", opts());
  EXPECT_EQ(s.cells.size(), 72u);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "matrix expands to 72 cells (more than 64): each cell is a process that trains a model");
  try {
    load_scenario_text("name: huge\nmatrix:\n  seq_len: " + axis(17) + "\n  steps: " + axis(16) + "\n", "huge.yaml",
                       opts());
    FAIL() << "a 272-cell matrix loaded";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "huge.yaml:2:1: matrix: expands to 272 cells, more than the limit of 256: split the scenario or "
              "exclude cells\nmatrix:\n^\n");
  }
}

TEST(Scenario, ModelAndPhiAxes) {
  Scenario s = load_scenario_text("name: m\ntrain: {seq_len: 64}\nmatrix:\n  phi: [mean]\n  model: [smoke, tiny]\n",
                                  "m.yaml", opts());
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_EQ(s.cells[0].id, "phi=mean,model=smoke");
  EXPECT_EQ(s.cells[0].model_name, "smoke");
  EXPECT_EQ(s.cells[0].model.d_model, 256);
  // phi applies after the model, whatever the axis order.
  EXPECT_EQ(s.cells[0].model.nsa.phi, "mean");
  EXPECT_EQ(s.cells[1].model.nsa.phi, "mean");
}

TEST(Scenario, ProbesAxisSwitchesEveryProbeOffForNone) {
  Scenario s = load_scenario_text("name: m\nprobes: {parity: false, finite: {every: 2}}\nmatrix:\n  probes: [all, none]\n",
                                  "m.yaml", opts());
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_EQ(s.cells[0].id, "probes=all");
  EXPECT_TRUE(s.cells[0].probes.at("finite").enabled);  // "all" keeps the file's settings
  EXPECT_EQ(s.cells[0].probes.at("finite").every, 2);
  EXPECT_FALSE(s.cells[0].probes.at("parity").enabled);
  ASSERT_FALSE(s.cells[1].probes.empty());
  for (const auto& [name, p] : s.cells[1].probes) EXPECT_FALSE(p.enabled) << name;
  try {
    load_scenario_text("name: m\nmatrix:\n  probes: [some]\n", "m.yaml", opts());
    FAIL() << "probes: some loaded";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:3:12: matrix.probes"), std::string::npos) << e.what();
  }
}

TEST(Scenario, ProbesAxisNamesASubsetOfProbes) {
  Scenario s = load_scenario_text("name: m\nprobes: {parity: false, finite: {every: 2}}\nmatrix:\n  probes: [cupti+finite, parity]\n",
                                  "m.yaml", opts());
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_EQ(s.cells[0].id, "probes=cupti+finite");
  for (const auto& [name, p] : s.cells[0].probes)
    EXPECT_EQ(p.enabled, name == "cupti" || name == "finite") << name;
  EXPECT_EQ(s.cells[0].probes.at("finite").every, 2);  // as the file set it
  // A probe the file switched off stays off: the subset only narrows.
  for (const auto& [name, p] : s.cells[1].probes) EXPECT_FALSE(p.enabled) << name;
  try {
    load_scenario_text("name: m\nmatrix:\n  probes: [cupti+finte]\n", "m.yaml", opts());
    FAIL() << "probes: cupti+finte loaded";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("m.yaml:3:12: matrix.probes[0]: unknown probe 'finte'"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'finite'?"), std::string::npos) << what;
  }
}

TEST(Scenario, ProbesAxisAlternateKeepsTheProbesAndMarksTheCell) {
  Scenario s = load_scenario_text("name: m\nprobes: {parity: false}\nmatrix:\n  probes: [alternate, all]\n", "m.yaml",
                                  opts());
  ASSERT_EQ(s.cells.size(), 2u);
  EXPECT_EQ(s.cells[0].id, "probes=alternate");
  EXPECT_TRUE(s.cells[0].observe_alternate);
  EXPECT_TRUE(s.cells[0].probes.at("finite").enabled);
  EXPECT_FALSE(s.cells[0].probes.at("parity").enabled);
  EXPECT_FALSE(s.cells[1].observe_alternate);
}

TEST(Scenario, InlineModelStartsFromBase) {
  Scenario s = load_scenario_text("name: m\nmodel:\n  base: tiny\n  n_layers: 1\n", "m.yaml", opts());
  ASSERT_EQ(s.cells.size(), 1u);
  EXPECT_EQ(s.cells[0].id, "default");
  EXPECT_EQ(s.cells[0].model_name, "inline");
  EXPECT_EQ(s.cells[0].model.n_layers, 1);
  EXPECT_EQ(s.cells[0].model.d_model, 64);
  EXPECT_EQ(s.cells[0].model.nsa.cmp_block, 8);
}

}  // namespace
}  // namespace harness
