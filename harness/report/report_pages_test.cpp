// The run directory a reader opens: report.md on one page with the root cause
// first, the detail one link away (appendix.md, cells/<dir>/cell.md), and every
// link resolving (checked by link_check, itself tested on hand-made pages).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "harness/core/atomic_file.h"
#include "harness/report/link_check.h"
#include "harness/report/markdown_cell_page.h"
#include "harness/report/markdown_report.h"
#include "harness/report/render_all.h"
#include "harness/report/report_writer.h"
#include "harness/report/report_links.h"
#include "harness/testing/report_fixtures.h"
#include "harness/testing/temp_dir.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

TEST(ReportPages, EveryLinkResolvesAndMissingFilesAreNamedNotLinked) {
  testing::TempDir dir;
  RunResult run = testing::prefill_hang_run();
  // One of the three recorded files exists: it is linked; the others are named.
  fs::create_directories(dir.path() / "cells" / "prefill=sequential,seq_len=128");
  std::ofstream(dir.path() / "cells/prefill=sequential,seq_len=128/stacks.txt") << "#0 wait\n";
  render_all(run, dir.str());
  const LinkReport links = check_links(dir.str());
  EXPECT_TRUE(links.problems.empty()) << describe(links);
  // report.md, appendix.md and one page per cell.
  EXPECT_EQ(links.pages.size(), 2 + run.cells.size());
  const std::string appendix = read_file((dir.path() / kAppendixFile).string());
  EXPECT_NE(appendix.find("[`cells/prefill=sequential,seq_len=128/stacks.txt`](cells/prefill=sequential,seq_len=128/stacks.txt)"),
            std::string::npos) << appendix;
  EXPECT_NE(appendix.find("`cells/prefill=sequential,seq_len=128/events.jsonl` (not kept)"), std::string::npos) << appendix;
}

TEST(ReportPages, CellIdsWithLinkBreakingCharactersStillResolve) {
  testing::TempDir dir;
  RunResult run;
  CellResult c = testing::make_cell({{"data", "bytes:a|b (x)#1"}}, Outcome::fail, "parity");
  run.cells = {c};
  render_all(run, dir.str());
  const LinkReport links = check_links(dir.str());
  EXPECT_TRUE(links.problems.empty()) << describe(links);
  EXPECT_EQ(links.pages.size(), 3u);
}

TEST(ReportPages, TheRootCauseComesBeforeTheMatrixAndTheCellPageKeepsTheStack) {
  testing::TempDir dir;
  render_all(testing::prefill_hang_run(), dir.str());
  const std::string md = read_file((dir.path() / kReportFile).string());
  const size_t cause = md.find("\n## Root Cause\n"), matrix = md.find("\n## Comparison Matrix\n");
  ASSERT_NE(cause, std::string::npos) << md;
  EXPECT_LT(cause, matrix);
  EXPECT_EQ(md.find("#0 nsa::prefill_sequential"), std::string::npos) << "the stack belongs on the cell page";
  const std::string page = read_file((dir.path() / cell_page_path("prefill=sequential,seq_len=128")).string());
  EXPECT_NE(page.find("#0 nsa::prefill_sequential\n#1 nsa::Attention::forward"), std::string::npos) << page;
}

TEST(ReportPages, TheCellPageShowsTheDataWaitNextToTheStepTimeWhenMeasured) {
  RunResult run = testing::prefill_hang_run();
  CellResult c = run.cells.at(1);
  const auto none = [](const std::string&) { return false; };
  const std::string line = "| Data wait + copy ms (median) |";
  EXPECT_EQ(render_cell_page(run, c, none).find(line), std::string::npos) << "an older result has no data time";
  c.metrics.data_ms_median = 0.25;
  const std::string page = render_cell_page(run, c, none);
  const size_t step = page.find("| Step ms (median / max) |"), data = page.find(line + " 0.25 |");
  ASSERT_NE(data, std::string::npos) << page;
  EXPECT_LT(step, data) << "the data time follows the step time";
}

// The weight-copy record as the child reports it: on with the count, off with
// the child's reason, and no row for a result that has none.
TEST(ReportPages, TheCellPageSaysWhetherTheStepsReadWeightCopies) {
  RunResult run = testing::prefill_hang_run();
  CellResult c = run.cells.at(1);
  const auto none = [](const std::string&) { return false; };
  EXPECT_EQ(render_cell_page(run, c, none).find("| Weight copies |"), std::string::npos);
  c.weight_copies = WeightCopiesRecord{208, ""};
  EXPECT_NE(render_cell_page(run, c, none).find("| Weight copies | on: 16-bit copies of 208 weights, refreshed each step |"),
            std::string::npos);
  c.weight_copies = WeightCopiesRecord{0, "switched off (NSA_WEIGHT_COPIES=0)"};
  EXPECT_NE(render_cell_page(run, c, none).find("| Weight copies | off: switched off (NSA_WEIGHT_COPIES=0) |"),
            std::string::npos);
}

TEST(ReportPages, ALargeMatrixShowsItsFailingCellsOnTopAndEveryCellInTheAppendix) {
  RunResult run;
  for (int i = 0; i < 20; ++i) run.cells.push_back(testing::make_cell({{"seed", std::to_string(i)}}, Outcome::pass));
  run.cells[7] = testing::make_cell({{"seed", "7"}}, Outcome::hang, "stall", 3, "forward");
  const std::string md = render_markdown(run);
  EXPECT_NE(md.find("| [`seed=7`](cells/seed=7/cell.md) | ❌ hang |"), std::string::npos) << md;
  EXPECT_EQ(md.find("[`seed=6`]"), std::string::npos) << md;
  EXPECT_NE(md.find("The other 19 cells passed"), std::string::npos) << md;
  testing::TempDir dir;
  render_all(run, dir.str());
  const std::string appendix = read_file((dir.path() / kAppendixFile).string());
  for (int i = 0; i < 20; ++i)
    EXPECT_NE(appendix.find(fmt::format("| [`seed={}`](cells/seed={}/cell.md) |", i, i)), std::string::npos) << i;
}

}  // namespace
}  // namespace harness
