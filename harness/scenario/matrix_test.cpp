// Expectations derived by hand from GitHub Actions' documented matrix
// semantics (product order, exclude by partial match, include extends or adds).
#include "harness/scenario/matrix.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

std::vector<std::string> ids(const std::vector<MatrixCell>& cells) {
  std::vector<std::string> out;
  for (auto& c : cells) out.push_back(c.id);
  return out;
}

TEST(Matrix, NoAxesIsTheSingleDefaultCell) {
  auto cells = expand_matrix({});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].id, "default");
  EXPECT_TRUE(cells[0].values.empty());
}

TEST(Matrix, ProductKeepsTheFirstAxisOutermostAndWrittenValueOrder) {
  MatrixInput m;
  m.axes = {{"prefill", {"sequential", "batched"}}, {"precision", {"fp32", "bf16", "fp16"}}};
  EXPECT_EQ(ids(expand_matrix(m)), (std::vector<std::string>{
                                       "prefill=sequential,precision=fp32",
                                       "prefill=sequential,precision=bf16",
                                       "prefill=sequential,precision=fp16",
                                       "prefill=batched,precision=fp32",
                                       "prefill=batched,precision=bf16",
                                       "prefill=batched,precision=fp16",
                                   }));
}

TEST(Matrix, ExcludeRemovesEveryCellMatchingAPartialAssignment) {
  MatrixInput m;
  m.axes = {{"a", {"1", "2"}}, {"b", {"x", "y"}}, {"c", {"p", "q"}}};
  m.exclude = {{{"a", "2"}, {"b", "x"}}, {{"c", "q"}, {"a", "1"}, {"b", "y"}}};
  EXPECT_EQ(ids(expand_matrix(m)), (std::vector<std::string>{
                                       "a=1,b=x,c=p",
                                       "a=1,b=x,c=q",
                                       "a=1,b=y,c=p",
                                       "a=2,b=y,c=p",
                                       "a=2,b=y,c=q",
                                   }));
}

// The example of GitHub's "Expanding or adding matrix configurations" docs.
TEST(Matrix, IncludeExtendsMatchingCellsOrAddsNewOnes) {
  MatrixInput m;
  m.axes = {{"fruit", {"apple", "pear"}}, {"animal", {"cat", "dog"}}};
  m.include = {
      {{"color", "green"}},
      {{"color", "pink"}, {"animal", "cat"}},
      {{"fruit", "apple"}, {"shape", "circle"}},
      {{"fruit", "banana"}},
      {{"fruit", "banana"}, {"animal", "cat"}},
  };
  auto cells = expand_matrix(m);
  EXPECT_EQ(ids(cells), (std::vector<std::string>{
                            "fruit=apple,animal=cat,color=pink,shape=circle",
                            "fruit=apple,animal=dog,color=green,shape=circle",
                            "fruit=pear,animal=cat,color=pink",
                            "fruit=pear,animal=dog,color=green",
                            "fruit=banana",
                            "fruit=banana,animal=cat",
                        }));
  EXPECT_EQ(cells[0].includes, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(cells[3].includes, (std::vector<size_t>{0}));
  EXPECT_EQ(cells[4].includes, (std::vector<size_t>{3}));
  EXPECT_EQ(cells[5].includes, (std::vector<size_t>{4}));
}

TEST(Matrix, IncludeNeverOverwritesAnOriginalAxisValue) {
  MatrixInput m;
  m.axes = {{"a", {"1"}}, {"b", {"2"}}};
  m.include = {{{"b", "3"}, {"c", "4"}, {"a", "1"}}};
  // b=3 conflicts with the product's b=2: a new cell, original axes first.
  EXPECT_EQ(ids(expand_matrix(m)), (std::vector<std::string>{"a=1,b=2", "a=1,b=3,c=4"}));
}

TEST(Matrix, ExcludedCellsAreNotCandidatesForInclude) {
  MatrixInput m;
  m.axes = {{"a", {"1", "2"}}};
  m.exclude = {{{"a", "2"}}};
  m.include = {{{"a", "2"}, {"c", "5"}}};
  EXPECT_EQ(ids(expand_matrix(m)), (std::vector<std::string>{"a=1", "a=2,c=5"}));
}

TEST(Matrix, IncludeOnlyMatrixMakesOneCellPerEntry) {
  MatrixInput m;
  m.include = {{{"a", "1"}}, {{"a", "2"}, {"b", "3"}}};
  EXPECT_EQ(ids(expand_matrix(m)), (std::vector<std::string>{"a=1", "a=2,b=3"}));
}

TEST(Matrix, ExcludingEverythingLeavesNoCell) {
  MatrixInput m;
  m.axes = {{"a", {"1"}}};
  m.exclude = {{{"a", "1"}}};
  EXPECT_TRUE(expand_matrix(m).empty());
}

}  // namespace
}  // namespace harness
