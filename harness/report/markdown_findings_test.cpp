#include "harness/report/markdown_findings.h"

#include <gtest/gtest.h>

namespace harness {
namespace {
using nlohmann::json;

TEST(RenderEvidence, EmptyEvidenceRendersNothing) { EXPECT_EQ(render_evidence(json::object()), ""); }

TEST(RenderEvidence, LongStacksAreCutToAnExcerpt) {
  json lines = json::array();
  for (int i = 0; i < 40; ++i) lines.push_back("#" + std::to_string(i) + " frame");
  std::string s = render_evidence({{"stack", lines}});
  EXPECT_EQ(s.rfind("Stack (first 30 of 40 lines):\n\n```text\n#0 frame\n", 0), 0u) << s;
  EXPECT_NE(s.find("#29 frame\n```\n"), std::string::npos);
  EXPECT_EQ(s.find("#30 frame"), std::string::npos);
}

TEST(RenderEvidence, ArraysOfObjectsBecomeTables) {
  json kernels = json::array({{{"name", "k1"}, {"ms", 2.5}}, {{"name", "k2"}, {"ms", 0.5}}});
  EXPECT_EQ(render_evidence({{"kernels", kernels}}),
            "kernels:\n\n| name | ms |\n|---|---|\n| k1 | 2.5 |\n| k2 | 0.5 |\n");
}

TEST(RenderEvidence, ScalarListsAndObjectsAreInline) {
  EXPECT_EQ(render_evidence({{"dead", {"w_q", "w_o"}}, {"shape", {{"B", 2}}}}),
            "Evidence:\n\n- dead: w_q, w_o\n- shape: `{\"B\":2}`\n");
}

TEST(RenderTable, SaysHowManyRowsWereLeftOut) {
  json rows = json::array();
  for (int i = 0; i < 4; ++i) rows.push_back({{"name", "k" + std::to_string(i)}});
  EXPECT_EQ(render_table(rows, 2), "| name |\n|---|\n| k0 |\n| k1 |\n\n(2 more rows)\n");
}

}  // namespace
}  // namespace harness
