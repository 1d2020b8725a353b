// Which failures are re-run before they stand, and whose result the cell
// keeps: a timing-only failure is confirmed in the same conditions; any
// failure on a shared GPU is re-run with the GPU to itself, and that run decides.
#include "harness/run/confirm_timing.h"

#include <gtest/gtest.h>

#include "harness/analysis/judgement.h"
#include "harness/testing/results.h"

namespace harness::run {
namespace {

CellResult shared(CellResult c, int sharers) {
  c.gpu_sharers = sharers;
  return c;
}

TEST(Recheck, SharedGpuFailuresTimingFailuresAndNothingElse) {
  const CellResult oom = testing::make_cell({{"S", "512"}}, Outcome::error, "out_of_memory", 1);
  EXPECT_EQ(recheck_for(oom), Recheck::none);  // alone on its GPU: the model's
  EXPECT_EQ(recheck_for(shared(oom, 2)), Recheck::shared_gpu);
  EXPECT_EQ(recheck_for(shared(oom, 1)), Recheck::none);
  const CellResult slow = testing::make_cell({}, Outcome::slow_step, "slow_step", 3);
  EXPECT_EQ(recheck_for(slow), Recheck::timing);
  EXPECT_EQ(recheck_for(shared(slow, 4)), Recheck::shared_gpu);
  EXPECT_EQ(recheck_for(shared(testing::make_cell({}, Outcome::pass), 24)), Recheck::none);
  CellResult done = shared(oom, 3);
  done.confirmation = Confirmation{};
  EXPECT_EQ(recheck_for(done), Recheck::none);  // confirmed before (a resumed run)
}

TEST(Recheck, AFailureOnASharedGpuThatPassesAloneIsThePass) {
  const CellResult first = shared(testing::make_cell({{"S", "512"}}, Outcome::error, "out_of_memory", 1), 24);
  CellResult alone = testing::make_cell({{"S", "512"}}, Outcome::pass);
  alone.gpu_sharers = 1;
  const CellResult r = settle_recheck(first, alone, Recheck::shared_gpu, "cells/S=512/confirm");
  EXPECT_EQ(judge(r).kind, Judgement::Kind::pass);
  EXPECT_EQ(r.gpu_sharers, 1);
  ASSERT_TRUE(r.confirmation);
  EXPECT_FALSE(r.confirmation->repeated);
  EXPECT_EQ(r.confirmation->first_reason, "out_of_memory");
  EXPECT_EQ(r.confirmation->rerun_dir, "cells/S=512/confirm");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.back().code, "shared_gpu_not_repeated");
  EXPECT_EQ(r.findings.back().severity, Severity::info);
  EXPECT_NE(r.findings.back().title.find("23 other cell(s)"), std::string::npos);
}

TEST(Recheck, WhatFailsAloneTooIsTheModelsAndTheAloneRunIsKept) {
  const CellResult first = shared(testing::make_cell({}, Outcome::error, "out_of_memory", 1), 8);
  CellResult alone = testing::make_cell({}, Outcome::error, "out_of_memory", 2);
  alone.gpu_sharers = 1;
  const CellResult r = settle_recheck(first, alone, Recheck::shared_gpu, "d");
  EXPECT_EQ(judge(r).reason, "out_of_memory");
  EXPECT_EQ(r.gpu_sharers, 1);
  ASSERT_TRUE(r.confirmation);
  EXPECT_TRUE(r.confirmation->repeated);
  // Alone it failed otherwise: that failure is the cell's, the first one a note.
  CellResult other = testing::make_cell({}, Outcome::fail, "non_finite", 4);
  other.gpu_sharers = 1;
  const CellResult r2 = settle_recheck(first, other, Recheck::shared_gpu, "d");
  EXPECT_EQ(judge(r2).reason, "non_finite");
  EXPECT_FALSE(r2.confirmation->repeated);
}

TEST(Recheck, ATimingFailureStandsWhenTheRerunFailsAndYieldsWhenItPasses) {
  const CellResult slow = testing::make_cell({}, Outcome::slow_step, "slow_step", 3);
  const CellResult again_slow = testing::make_cell({}, Outcome::slow_step, "slow_step", 5);
  const CellResult kept = settle_recheck(slow, again_slow, Recheck::timing, "d");
  EXPECT_EQ(kept.findings.front().step, 3);  // the first run stands
  EXPECT_TRUE(kept.confirmation->repeated);
  const CellResult passed = settle_recheck(slow, testing::make_cell({}, Outcome::pass), Recheck::timing, "d");
  EXPECT_EQ(judge(passed).kind, Judgement::Kind::pass);
  EXPECT_EQ(passed.findings.back().code, "timing_not_repeated");
}

}  // namespace
}  // namespace harness::run
