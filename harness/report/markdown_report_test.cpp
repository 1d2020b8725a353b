#include "harness/report/markdown_report.h"

#include <gtest/gtest.h>

#include "harness/core/atomic_file.h"
#include "harness/report/golden.h"
#include "harness/report/markdown_appendix.h"
#include "harness/testing/report_fixtures.h"

namespace harness {
namespace {

std::string golden(const char* name) { return read_file(std::string(NSA_REPORT_TESTDATA) + "/" + name); }

// A run of one cell with the given outcome and reason.
RunResult one_cell(const char* id, Outcome outcome, const char* reason) {
  RunResult r;
  CellResult c;
  c.id = id, c.outcome = outcome, c.reason = reason;
  r.cells = {c};
  return r;
}

TEST(MarkdownReport, PrefillHangMatchesTheHandWrittenGolden) {
  EXPECT_TRUE(testing::matches_golden(golden("prefill_hang.md"), render_markdown(testing::prefill_hang_run())));
}

TEST(MarkdownReport, Fp16NanMatchesTheHandWrittenGolden) {
  EXPECT_TRUE(testing::matches_golden(golden("fp16_nan.md"), render_markdown(testing::fp16_nan_run())));
}

TEST(MarkdownReport, AnEmptyRunStillHasTheFixedSections) {
  RunResult r;
  std::string md = render_markdown(r);
  EXPECT_EQ(md.rfind("# n/a Test Engineer Report - n/a\n", 0), 0u) << md;
  for (const char* section : {"## Executive Summary", "## Comparison Matrix", "## Acceptance Gates", "## Reproduce",
                              "## Charts", "## Next Actions", "## Appendices"})
    EXPECT_NE(md.find(std::string("\n") + section + "\n"), std::string::npos) << section;
  EXPECT_EQ(md.find("## Root Cause"), std::string::npos) << "nothing failed, nothing to explain";
  EXPECT_NE(md.find("**Decision**: **GO** ✅"), std::string::npos);
  EXPECT_NE(md.find("Nothing failed; nothing to reproduce."), std::string::npos);
}

TEST(MarkdownReport, AFailingCellWithoutFindingsIsItsOwnRootCause) {
  RunResult r = one_cell("default", Outcome::crash, "signal");
  r.cells[0].term_signal = 11;
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Root Cause\n\n**crash without a recorded finding** (`signal`) — the crash in 1 cell.\n\n"
                    "- Cells it explains: [`default`](cells/default/cell.md)\n- What was seen: Killed by signal 11.\n"),
            std::string::npos)
      << md;
}

TEST(MarkdownReport, PipesInValuesDoNotBreakTheTable) {
  const std::string md = render_markdown(one_cell("data=bytes:a|b", Outcome::fail, "parity"));
  // The '|' is escaped in the link text and percent-free in the target (the cell's directory name has none).
  EXPECT_NE(md.find("| [`data=bytes:a\\|b`](cells/data=bytes_a_b~"), std::string::npos) << md;
  EXPECT_NE(md.find("/cell.md) | ❌ fail | parity |"), std::string::npos) << md;
}

TEST(MarkdownReport, CellsOnGpusGetAGpuColumn) {
  RunResult r;
  CellResult a, b;
  a.id = "on_gpu";
  a.gpus = {GpuDevice{1, "GPU-bbb", "Fake B"}};
  b.id = "on_cpu";
  r.cells = {a, b};
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| Step ms (median) | GPU |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| [`on_gpu`](cells/on_gpu/cell.md) | ✅ pass | — | 0/0 | n/a | n/a | n/a | 1 `GPU-bbb` (Fake B) |\n"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| [`on_cpu`](cells/on_cpu/cell.md) | ✅ pass | — | 0/0 | n/a | n/a | n/a | — |\n"), std::string::npos) << md;
  r.cells = {b};  // no cell on a GPU: the table as it always was
  EXPECT_EQ(render_markdown(r).find("| GPU |"), std::string::npos);
}

// The top page's Settings: a cell whose id names every flag it ran with (as
// K=V) and no fault needs no row there; one with a flag from the environment,
// a flag outside its id, or a fault keeps its row; the appendix lists all.
TEST(MarkdownReport, SettingsOnTheTopPageListOnlyWhatTheIdsDoNotSay) {
  RunResult r;
  CellResult named, env, fault;
  named.id = "attention=nsa,NSA_WINDOW_BWD=ours";
  named.flags = {{"NSA_WINDOW_BWD", "ours"}};
  env.id = "attention=dense,NSA_WINDOW_BWD=ours";
  env.flags = {{"NSA_WINDOW_BWD", "ours"}, {"NSA_SELECTED_DQ", "atomic"}};
  env.from_environment = {"NSA_SELECTED_DQ"};
  fault.id = "attention=nsa,NSA_WINDOW_BWD=cudnn";
  fault.flags = {{"NSA_WINDOW_BWD", "cudnn"}};
  fault.faults = {"causal_leak"};
  r.cells = {named};
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Settings\n\nEvery cell ran with the flags its id names as `K=V` and no others: none from the "
                    "environment, no fault ([table](appendix.md#settings)).\n"),
            std::string::npos) << md;
  EXPECT_EQ(md.find("| Cell | Flags | Faults |"), std::string::npos) << md;

  r.cells = {named, env, fault};
  md = render_markdown(r);
  EXPECT_NE(md.find("where its id does not say them all (1 more in the [appendix](appendix.md#settings)):"),
            std::string::npos) << md;
  EXPECT_EQ(md.find("| `attention=nsa,NSA_WINDOW_BWD=ours` |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `attention=dense,NSA_WINDOW_BWD=ours` | `NSA_SELECTED_DQ=atomic` *env*, `NSA_WINDOW_BWD=ours` | — |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| `attention=nsa,NSA_WINDOW_BWD=cudnn` | `NSA_WINDOW_BWD=cudnn` | `causal_leak` |"), std::string::npos)
      << md;
  const std::string appendix = render_appendix(r, [](const std::string&) { return true; });
  EXPECT_NE(appendix.find("| `attention=nsa,NSA_WINDOW_BWD=ours` | `NSA_WINDOW_BWD=ours` | — |"), std::string::npos)
      << appendix;
}

TEST(MarkdownReport, ProbesAxisPairsGetAnObservationCostTable) {
  RunResult r;
  auto cell = [](const std::string& probes, double step_ms, double probe_ms) {
    CellResult c;
    c.axes = {{"probes", probes}};
    c.id = "probes=" + probes;
    c.metrics.step_ms_median = step_ms;
    c.metrics.probe_ms_median = probe_ms;
    return c;
  };
  r.cells = {cell("all", 103.0, 2.0), cell("none", 99.5, 0.5)};
  r.cells[0].probe_costs = {ProbeCost{"finite", 1.5, 8}};
  std::string md = render_markdown(r);
  // The hooks' table is the appendix's; the top page links to it.
  EXPECT_EQ(md.find("| name | median_ms | steps |"), std::string::npos) << md;
  EXPECT_NE(md.find("[appendix](appendix.md#time-outside-the-step)"), std::string::npos) << md;
  const std::string appendix = render_appendix(r, [](const std::string&) { return true; });
  EXPECT_NE(appendix.find("\n## Time Outside the Step\n\nStep-end hooks of `probes=all` (median ms per step, largest "
                          "first):\n\n| name | median_ms | steps |\n|---|---|---|\n| finite | 1.5 | 8 |"),
            std::string::npos)
      << appendix;
  // (103 + 2) / (99.5 + 0.5) - 1 = +5.0 %: over the 3 % goal.
  EXPECT_NE(md.find("\n## Observation Cost\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| `probes=all` | 103.0 | 2.00 | 100.0 | +5.0 % | n/a | n/a | ≤ 3 % | ❌ |"), std::string::npos) << md;
  // With the bare cell's steps: 98..102 around 100 → σ = 1.4826 × 1 ms: +5 % is over twice that.
  for (double ms : {500.0, 98.0, 99.0, 100.0, 101.0, 102.0}) r.cells[1].steps.push_back(StepRecord{0, 1.0, ms});
  md = render_markdown(r);
  EXPECT_NE(md.find("| +5.0 % | ±1.5 % | n/a | ≤ 3 % | ❌ |"), std::string::npos) << md;
  EXPECT_EQ(md.find("within noise"), std::string::npos) << md;
  // 80..120: σ = 1.4826 × 10 ms = 14.8 %: +5 % is within it.
  r.cells[1].steps.clear();
  for (double ms : {500.0, 80.0, 90.0, 100.0, 110.0, 120.0}) r.cells[1].steps.push_back(StepRecord{0, 1.0, ms});
  md = render_markdown(r);
  EXPECT_NE(md.find("| +5.0 % (within noise) | ±14.8 % | n/a | ≤ 3 % | ❌ |"), std::string::npos) << md;
  EXPECT_NE(md.find("cannot be told from them"), std::string::npos) << md;
  // The observed cell's own steps: five eager ones, 80..130 around 105 (MAD
  // 10 ms, σ 14.826), make the cost's estimate uncertain by 1.2533 × 14.826 /
  // √5 = 8.31 ms; with the bare side's 1.2533 × 1.4826 / √5 = 0.83 ms, 8.35 % of
  // its 100 ms step. +5 % is then within twice the two in quadrature although
  // the bare cell alone (±1.5 %) would call it measured.
  r.cells[1].steps.clear();
  for (double ms : {500.0, 98.0, 99.0, 100.0, 101.0, 102.0}) r.cells[1].steps.push_back(StepRecord{0, 1.0, ms});
  for (double ms : {900.0, 80.0, 95.0, 105.0, 110.0, 130.0}) r.cells[0].steps.push_back(StepRecord{0, 1.0, ms});
  md = render_markdown(r);
  EXPECT_NE(md.find("| `probes=all` | 105.0 | 0.00 | 100.0 | +5.0 % (within noise) | ±1.5 % | ±8.4 % | ≤ 3 % | ❌ |"),
            std::string::npos)
      << md;
  r.cells.pop_back();  // without the bare cell the section is left out
  EXPECT_EQ(render_markdown(r).find("Observation Cost"), std::string::npos);
}

TEST(MarkdownReport, AttentionAxisPairsGetNsaOverDenseInOneTable) {
  RunResult r;
  auto cell = [](const std::string& attention, double tok_s) {
    CellResult c;
    c.axes = {{"attention", attention}};
    c.id = "attention=" + attention;
    c.outcome = Outcome::pass;
    c.metrics.tok_s = tok_s;
    return c;
  };
  r.cells = {cell("nsa", 50000.0), cell("dense", 200000.0)};
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("\n## Against Dense Attention\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| `attention=nsa` | `attention=dense` | 50000 | 200000 | 0.25× | n/a |"), std::string::npos) << md;
  r.cells.pop_back();  // without the dense cell the section is left out
  EXPECT_EQ(render_markdown(r).find("Against Dense Attention"), std::string::npos);
}

// window_bwd.yaml: the one dense cell is the cudnn_atomic cell's baseline too,
// and its row says which dense cell and which flag the two differ in.
TEST(MarkdownReport, DenseTableNamesTheBaselineAndTheNsaLayerOnlyFlagItDiffersIn) {
  RunResult r;
  auto cell = [](const std::string& attention, const std::string& bwd, double tok_s) {
    CellResult c;
    c.axes = {{"attention", attention}, {"NSA_WINDOW_BWD", bwd}};
    c.id = "attention=" + attention + ",NSA_WINDOW_BWD=" + bwd;
    c.outcome = Outcome::pass;
    c.metrics.tok_s = tok_s;
    return c;
  };
  r.cells = {cell("nsa", "ours", 50000.0), cell("nsa", "cudnn_atomic", 60000.0), cell("dense", "ours", 200000.0)};
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| NSA cell | Dense cell | NSA tok/s | Dense tok/s | NSA ÷ dense | Noise (±1σ) |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `attention=nsa,NSA_WINDOW_BWD=ours` | `attention=dense,NSA_WINDOW_BWD=ours` | 50000 | 200000 | "
                    "0.25× | n/a |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `attention=nsa,NSA_WINDOW_BWD=cudnn_atomic` | `attention=dense,NSA_WINDOW_BWD=ours` (differs in "
                    "`NSA_WINDOW_BWD`, NSA layer only) | 60000 | 200000 | 0.30× | n/a |\n"),
            std::string::npos)
      << md;
}

// `repeat: 2`: the top page counts the settings whose runs computed the same
// losses and names the earliest parting (precision=bf16's runs differ at step
// 2: |4.5 - 4.0| / 4.0 = 0.125); the appendix lists each setting. Without
// repeats neither appears.
TEST(MarkdownReport, RepeatedRunsGetAReproducibilityLineAndTable) {
  RunResult r;
  auto cell = [](const std::string& precision, const std::string& repeat, std::vector<double> losses) {
    CellResult c;
    c.axes = {{"precision", precision}, {"repeat", repeat}};
    c.id = "precision=" + precision + ",repeat=" + repeat;
    c.outcome = Outcome::pass;
    for (size_t i = 0; i < losses.size(); ++i) {
      StepRecord s;
      s.step = int(i) + 1, s.loss = losses[i];
      c.steps.push_back(s);
    }
    return c;
  };
  r.cells = {cell("fp32", "1", {5.0, 4.0}), cell("fp32", "2", {5.0, 4.0}), cell("bf16", "1", {5.0, 4.0}),
             cell("bf16", "2", {5.0, 4.5})};
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("\n## Reproducibility\n\n1 of 2 settings run more than once (`repeat: N`) computed the same "
                    "losses bit for bit in every run; the others' runs part, the earliest at step 2 (relative "
                    "1.2e-01) in `precision=bf16` ([table](appendix.md#reproducibility))."),
            std::string::npos)
      << md;
  const std::string appendix = render_appendix(r, [](const std::string&) { return true; });
  EXPECT_NE(appendix.find("| `precision=fp32` | 2 | 2 | yes | — |\n| `precision=bf16` | 2 | 2 | no | step 2 (relative "
                          "1.2e-01) |\n"),
            std::string::npos)
      << appendix;
  for (auto& c : r.cells) c.axes.pop_back();
  EXPECT_EQ(render_markdown(r).find("Reproducibility"), std::string::npos);
}

}  // namespace
}  // namespace harness
