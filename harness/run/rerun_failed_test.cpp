#include "harness/run/rerun_failed.h"

#include <gtest/gtest.h>

#include "harness/run/run_dir.h"
#include "harness/testing/results.h"

namespace harness::run {
namespace {
using testing::make_cell;

// Every outcome but pass re-runs (a skip has no verdict yet), and so does a
// cell the run never finished; passes are kept.
TEST(RerunFailed, EverythingButAPassRunsAgain) {
  RunResult prev;
  prev.scenario = {{"file", "s.yaml"}};
  prev.cells = {make_cell({{"c", "1"}}, Outcome::pass), make_cell({{"c", "2"}}, Outcome::fail, "non_finite", 2),
                make_cell({{"c", "3"}}, Outcome::skip, "no_cuda"), make_cell({{"c", "4"}}, Outcome::hang, "stall")};
  prev.completion.not_run = {"c=5"};
  const RerunPlan p = plan_rerun_failed(prev, "");
  EXPECT_EQ(p.scenario_path, "s.yaml");
  EXPECT_EQ(p.kept, (std::set<std::string>{"c=1"}));
  EXPECT_EQ(p.rerun, (std::set<std::string>{"c=2", "c=3", "c=4", "c=5"}));
  EXPECT_EQ(plan_rerun_failed(prev, "other.yaml").scenario_path, "other.yaml");
}

TEST(RerunFailed, ARunWithoutAScenarioFileNeedsOneGiven) {
  RunResult prev;
  EXPECT_THROW(plan_rerun_failed(prev, ""), InputError);
  EXPECT_EQ(plan_rerun_failed(prev, "s.yaml").scenario_path, "s.yaml");
}

}  // namespace
}  // namespace harness::run
