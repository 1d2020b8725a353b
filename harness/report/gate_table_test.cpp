// A branch share outside the scenario's limits, from the gates probe's table to
// the report's Acceptance Gates table: judged once (analysis/gates.cpp) and
// listed with the branch named and its measured value. The expected rows are
// written by hand from the table below: slc's lowest share is 0.04 (layer 1),
// cmp's highest 0.62 (layer 1).
#include <gtest/gtest.h>

#include "harness/analysis/analyze.h"
#include "harness/report/markdown_appendix.h"
#include "harness/report/markdown_report.h"
#include "harness/testing/results.h"

namespace harness {
namespace {

RunResult run_with_shares(double min_share, double max_share) {
  CellResult c = testing::make_cell({{"seq_len", "128"}}, Outcome::pass);
  testing::add_steps(c, {10, 10, 10});
  c.gates = testing::gates_from({{"min_branch_share", min_share}, {"max_branch_share", max_share}});
  c.gate_stats = GateStats{3, {LayerGateStats{0, 0.45, 0.30, 0.25}, LayerGateStats{1, 0.62, 0.04, 0.34}}};
  RunResult run;
  run.cells = {c};
  analyze(run);
  return run;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A row of the report's gate table for the one cell, as DESIGN §5 lays it out.
std::string row(const std::string& gate, const std::string& required, const std::string& measured,
                const std::string& met) {
  return "| " + gate + " | `seq_len=128` | " + required + " | " + measured + " | " + met + " |\n";
}

TEST(GateTable, BranchShareOutsideTheLimitsFailsThatGateWithTheBranchNamed) {
  RunResult run = run_with_shares(0.1, 0.6);
  const std::string md = render_markdown(run);
  EXPECT_TRUE(has(md, row("min_branch_share", "every branch ≥ 0.1", "slc 0.040 (layer 1)", "❌"))) << md;
  EXPECT_TRUE(has(md, row("max_branch_share", "every branch ≤ 0.6", "cmp 0.620 (layer 1)", "❌"))) << md;
  EXPECT_EQ(run.decision, Decision::no_go);
  // Judged once: one row per gate and cell.
  int rows = 0;
  for (auto& g : run.gates) rows += g.gate == "min_branch_share";
  EXPECT_EQ(rows, 1);
}

// Met gates decide nothing, so their table is in the appendix, not on the one-page report.
TEST(GateTable, BranchShareWithinTheLimitsMeetsTheGate) {
  RunResult run = run_with_shares(0.04, 0.62);  // the limits are inclusive
  const std::string md = render_appendix(run, [](const std::string&) { return true; });
  EXPECT_TRUE(has(md, row("min_branch_share", "every branch ≥ 0.04", "slc 0.040 (layer 1)", "✅"))) << md;
  EXPECT_TRUE(has(md, row("max_branch_share", "every branch ≤ 0.62", "cmp 0.620 (layer 1)", "✅"))) << md;
  EXPECT_EQ(run.decision, Decision::go);
}

// results.json written before the typed field kept the table under extra.gates:
// the re-rendered report judges it alike.
TEST(GateTable, AnOlderResultsFileWithTheTableUnderExtraIsJudgedAlike) {
  RunResult fresh = run_with_shares(0.1, 0.6);
  nlohmann::json j = fresh;
  auto& cell = j["cells"][0];
  cell["extra"]["gates"] = cell["gate_stats"];
  cell.erase("gate_stats");
  RunResult old = j.get<RunResult>();
  analyze(old);
  EXPECT_TRUE(has(render_markdown(old), row("min_branch_share", "every branch ≥ 0.1", "slc 0.040 (layer 1)", "❌")));
}

}  // namespace
}  // namespace harness
