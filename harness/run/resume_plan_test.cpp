#include "harness/run/resume_plan.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "harness/core/atomic_file.h"
#include "harness/run/spec_hash.h"
#include "harness/testing/temp_dir.h"
#include "harness/supervisor/runner.h"

namespace harness::run {
namespace {
using harness::testing::TempDir;

CellSpec cell(const std::string& id) {
  CellSpec c;
  c.id = id;
  c.scenario_name = "s";
  c.scenario_file = "scenarios/s.yaml";
  c.device = "cpu";
  return c;
}

CellResult stored(const CellSpec& c, const std::string& hash) {
  CellResult r;
  r.id = c.id;
  r.spec_hash = hash;
  return r;
}

TEST(SpecHash, SameSpecSameHashWhereverTheFileLies) {
  CellSpec a = cell("x"), b = cell("x");
  b.scenario_file = "./elsewhere/s.yaml";
  EXPECT_EQ(cell_spec_hash(a), cell_spec_hash(b));
  EXPECT_EQ(cell_spec_hash(a).size(), 16u);
}

TEST(SpecHash, EverySettingThatChangesTheRunChangesTheHash) {
  const CellSpec base = cell("x");
  const std::string h = cell_spec_hash(base);
  std::vector<std::pair<std::string, std::function<void(CellSpec&)>>> changes = {
      {"flag", [](CellSpec& c) { c.flags["NSA_PREFILL_BATCHED"] = "1"; }},
      {"fault", [](CellSpec& c) { c.faults.push_back("causal_leak"); }},
      {"environment", [](CellSpec& c) { c.from_environment.push_back("NSA_PREFILL_BATCHED"); }},
      {"steps", [](CellSpec& c) { c.train.steps += 1; }},
      {"device", [](CellSpec& c) { c.device = "cuda"; }},
      {"watchdog", [](CellSpec& c) { c.watchdog.stall_timeout_s += 1; }},
      {"gate", [](CellSpec& c) { c.gates.min_tok_s = 1.0; }},
      {"model", [](CellSpec& c) { c.model.n_layers += 1; }},
  };
  for (auto& [what, change] : changes) {
    CellSpec c = base;
    change(c);
    EXPECT_NE(cell_spec_hash(c), h) << what << " did not change the hash";
  }
}

TEST(DecideResume, NoStoredResultRuns) {
  auto d = decide_resume(cell("x"), "h", std::nullopt);
  EXPECT_EQ(d.action, ResumeAction::run);
}

TEST(DecideResume, SameHashReuses) {
  auto d = decide_resume(cell("x"), "h", stored(cell("x"), "h"));
  EXPECT_EQ(d.action, ResumeAction::reuse);
  ASSERT_TRUE(d.reused);
  EXPECT_EQ(d.reused->id, "x");
}

TEST(DecideResume, ChangedHashReRunsAndSaysWhy) {
  auto d = decide_resume(cell("x"), "new", stored(cell("x"), "old"));
  EXPECT_EQ(d.action, ResumeAction::rerun_changed);
  EXPECT_FALSE(d.reused);
  EXPECT_NE(d.why.find("old → new"), std::string::npos) << d.why;
}

TEST(DecideResume, ResultWithoutHashIsNotTrusted) {
  auto d = decide_resume(cell("x"), "h", stored(cell("x"), ""));
  EXPECT_EQ(d.action, ResumeAction::rerun_changed);
}

TEST(DecideResume, AnotherCellsResultRunsFresh) {
  auto d = decide_resume(cell("x"), "h", stored(cell("y"), "h"));
  EXPECT_EQ(d.action, ResumeAction::run);
}

// Through the run directory, as `run --resume` sees it.
TEST(PlanResume, ReadsEachCellsResultFromTheRunDirectory) {
  harness::testing::TempDir dir;
  CellSpec same = cell("same"), changed = cell("changed"), fresh = cell("fresh");
  auto put = [&](const CellSpec& c, const std::string& hash) {
    auto d = dir.path() / "cells" / supervisor::cell_dir_name(c.id);
    std::filesystem::create_directories(d);
    write_file_atomic((d / "result.json").string(), nlohmann::json(stored(c, hash)).dump());
  };
  put(same, cell_spec_hash(same));
  CellSpec before = changed;
  before.flags["NSA_PREFILL_BATCHED"] = "1";
  put(changed, cell_spec_hash(before));
  std::vector<CellSpec> cells = {same, changed, fresh};

  ResumePlan plan = plan_resume(cells, dir.str(), true);
  ASSERT_EQ(plan.decisions.size(), 3u);
  EXPECT_EQ(plan.decisions[0].action, ResumeAction::reuse);
  EXPECT_EQ(plan.decisions[1].action, ResumeAction::rerun_changed);
  EXPECT_EQ(plan.decisions[2].action, ResumeAction::run);
  EXPECT_EQ(plan.reused(), 1);
  EXPECT_EQ(plan.rerun_changed(cells), std::vector<std::string>{"changed"});

  ResumePlan no_resume = plan_resume(cells, dir.str(), false);
  for (auto& d : no_resume.decisions) EXPECT_EQ(d.action, ResumeAction::run);
}

}  // namespace
}  // namespace harness::run
