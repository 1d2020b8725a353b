#include "harness/report/compare_report.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(CompareReport, ListsChangesAndCountsRegressions) {
  Comparison c{"s", "s",
               {{"a", ChangeKind::regression, "pass", "hang (stall)", ""},
                {"b", ChangeKind::fix, "fail (non_finite)", "pass", ""},
                {"c", ChangeKind::slower, "100.0 ms", "150.0 ms", "+50.0% median step time"}}};
  std::string md = render_comparison(c, "runs/a", "runs/b");
  EXPECT_EQ(md.rfind("# Run Comparison - s\n\n**A**: `runs/a`  \n**B**: `runs/b`  \n**Result**: **2 regressions** ❌\n", 0),
            0u)
      << md;
  EXPECT_NE(md.find("| `a` | ❌ regression | pass | hang (stall) | — |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| `b` | ✅ fix | fail (non_finite) | pass | — |\n"), std::string::npos);
  EXPECT_NE(md.find("| `c` | ❌ slower | 100.0 ms | 150.0 ms | +50.0% median step time |\n"), std::string::npos);
}

TEST(CompareReport, NoChangesSaysSo) {
  std::string md = render_comparison(Comparison{"s", "s", {}}, "a", "b");
  EXPECT_NE(md.find("**Result**: **no regression** ✅"), std::string::npos);
  EXPECT_NE(md.find("No outcome changes and no step-time changes beyond noise."), std::string::npos);
}

}  // namespace
}  // namespace harness
