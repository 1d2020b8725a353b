// The scheduler's ways of ending a cell without a verdict, without a model:
// a child binary that does not exist (a harness failure) and a run cancelled
// before it starts. Neither leaves a result.json that --resume would trust.
#include "harness/run/scheduler.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using ::testing::HasSubstr;
using harness::testing::TempDir;

std::vector<CellSpec> cells(int n) {
  std::vector<CellSpec> out;
  for (int i = 0; i < n; ++i) {
    CellSpec c;
    c.id = "cell" + std::to_string(i);
    c.device = "cpu";
    out.push_back(c);
  }
  return out;
}

bool any_result_file(const std::filesystem::path& run_dir) {
  if (!std::filesystem::exists(run_dir / "cells")) return false;
  for (auto& e : std::filesystem::recursive_directory_iterator(run_dir / "cells"))
    if (e.path().filename() == "result.json") return true;
  return false;
}

TEST(Schedule, MissingChildBinaryIsAHarnessFailureNotACrash) {
  harness::testing::TempDir dir;
  auto cs = cells(3);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  auto argv = [](const CellSpec&, const std::string&) {
    return std::vector<std::string>{"/nonexistent/nsa-harness", "cell"};
  };
  Schedule s = schedule_cells(cs, plan_resume(cs, dir.str(), false), argv, o);
  ASSERT_TRUE(s.harness_failure);
  EXPECT_EQ(s.harness_failure->cell, "cell0");
  EXPECT_THAT(s.harness_failure->cause, HasSubstr("/nonexistent/nsa-harness"));
  for (auto& r : s.results) EXPECT_FALSE(r) << "a cell got a verdict: " << r->id;
  EXPECT_FALSE(any_result_file(dir.path()));
}

TEST(Schedule, CancelledBeforeStartRunsNothing) {
  harness::testing::TempDir dir;
  auto cs = cells(2);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  o.cancelled = [] { return true; };
  int launched = 0;
  auto argv = [&](const CellSpec&, const std::string&) {
    ++launched;
    return std::vector<std::string>{"/bin/true"};
  };
  Schedule s = schedule_cells(cs, plan_resume(cs, dir.str(), false), argv, o);
  EXPECT_TRUE(s.cancelled);
  EXPECT_FALSE(s.harness_failure);
  EXPECT_EQ(launched, 0);
  for (auto& r : s.results) EXPECT_FALSE(r);
}

TEST(Schedule, ReusedResultsStandWithoutAProcess) {
  harness::testing::TempDir dir;
  auto cs = cells(1);
  ResumePlan plan;
  ResumeDecision d;
  d.action = ResumeAction::reuse;
  d.reused = CellResult{};
  d.reused->id = "cell0";
  plan.decisions.push_back(d);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  int launched = 0;
  auto argv = [&](const CellSpec&, const std::string&) {
    ++launched;
    return std::vector<std::string>{"/bin/true"};
  };
  Schedule s = schedule_cells(cs, plan, argv, o);
  ASSERT_TRUE(s.results[0]);
  EXPECT_EQ(s.results[0]->id, "cell0");
  EXPECT_EQ(launched, 0);
}

}  // namespace
}  // namespace harness::run
