#include "harness/scenario/diagnostic.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(Diagnostic, FormatsPositionKeyLineAndCaret) {
  Diagnostic d{"s.yaml", 4, 3, "train.precison", "unknown key", "  precison: fp16"};
  EXPECT_EQ(format_diagnostic(d), "s.yaml:4:3: train.precison: unknown key\n  precison: fp16\n  ^\n");
}

TEST(Diagnostic, CaretKeepsTabsOfTheLine) {
  Diagnostic d{"s.yaml", 1, 3, "", "bad", "\tx: y"};
  EXPECT_EQ(format_diagnostic(d), "s.yaml:1:3: bad\n\tx: y\n\t ^\n");
}

TEST(Diagnostic, UnknownPositionIsOneLine) {
  Diagnostic d{"s.yaml", 0, 0, "", "cannot read the scenario file", ""};
  EXPECT_EQ(format_diagnostic(d), "s.yaml: cannot read the scenario file\n");
}

TEST(Diagnostic, ErrorWhatHoldsEveryDiagnostic) {
  ScenarioError e({{"a.yaml", 1, 1, "x", "one", "x: 1"}, {"a.yaml", 2, 1, "y", "two", "y: 2"}});
  EXPECT_STREQ(e.what(), "a.yaml:1:1: x: one\nx: 1\n^\na.yaml:2:1: y: two\ny: 2\n^\n");
}

TEST(DidYouMean, SuggestsCloseNamesBestFirst) {
  EXPECT_EQ(did_you_mean("precison", {"steps", "precision", "seed"}), " (did you mean 'precision'?)");
  EXPECT_EQ(did_you_mean("sed", {"seed", "seq", "lr"}), " (did you mean 'seed' or 'seq'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"seed", "lr"}), "");
  EXPECT_EQ(did_you_mean_ranked({"a", "b", "c", "d"}), " (did you mean 'a', 'b' or 'c'?)");
}

}  // namespace
}  // namespace harness
