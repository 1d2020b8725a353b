#include "harness/scenario/select.h"

#include <gtest/gtest.h>

#include "harness/testing/cells.h"

namespace harness {
namespace {

std::vector<CellSpec> cells(const std::vector<std::string>& ids) { return testing::cells_with_ids(ids); }
std::vector<std::string> ids(const std::vector<CellSpec>& cs) { return testing::each(cs, &CellSpec::id); }

const auto kCells = cells({"prefill=sequential,precision=fp32", "prefill=sequential,precision=bf16",
                           "prefill=batched,precision=fp32", "prefill=batched,precision=bf16"});

TEST(SelectCells, GlobMatchesWholeIds) {
  EXPECT_EQ(ids(select_cells(kCells, "prefill=batched,*")),
            (std::vector<std::string>{"prefill=batched,precision=fp32", "prefill=batched,precision=bf16"}));
  EXPECT_EQ(ids(select_cells(kCells, "*bf16")),
            (std::vector<std::string>{"prefill=sequential,precision=bf16", "prefill=batched,precision=bf16"}));
  // Without a '*' the pattern must be the whole id.
  EXPECT_TRUE(select_cells(kCells, "prefill=batched").empty());
  EXPECT_EQ(ids(select_cells(kCells, "prefill=?atched,precision=fp3[0-9]")),
            (std::vector<std::string>{"prefill=batched,precision=fp32"}));
}

TEST(SelectCells, SeveralGlobsAreOredAndKeepMatrixOrder) {
  auto want = std::vector<std::string>{"prefill=sequential,precision=fp32", "prefill=batched,precision=bf16"};
  EXPECT_EQ(ids(select_cells(kCells, "*batched*bf16;*sequential*fp32")), want);
  EXPECT_EQ(ids(select_cells(kCells, "*batched*bf16|*sequential*fp32")), want);
  // A cell matched by two patterns appears once.
  EXPECT_EQ(select_cells(kCells, "*fp32|prefill=batched,*").size(), 3u);
}

TEST(SelectCells, EmptyGlobSelectsEverything) {
  EXPECT_EQ(select_cells(kCells, "").size(), 4u);
  EXPECT_EQ(select_cells(kCells, ";|").size(), 4u);
}

TEST(SelectCells, DefaultCell) {
  auto one = cells({"default"});
  EXPECT_EQ(select_cells(one, "default").size(), 1u);
  EXPECT_EQ(select_cells(one, "*").size(), 1u);
}

}  // namespace
}  // namespace harness
