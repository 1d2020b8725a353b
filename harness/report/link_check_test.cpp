#include "harness/report/link_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/testing/temp_dir.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

// A run directory written by hand: which links are broken is known by construction.
class LinkCheck : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_ / "cells" / "a=1"); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  testing::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(LinkCheck, FollowsPagesAndFindsEveryBrokenLink) {
  write("report.md",
        "# R\n\n![chart](loss.svg) [cell](cells/a%3D1/cell.md) [gone](cells/a=1/trace.json)\n"
        "[web](https://example.com) `[0x55](not-a-link)` [app](appendix.md#next-actions)\n");
  write("loss.svg", "<svg/>");
  write("appendix.md", "# A\n\n## Next Actions\n\n[back](report.md) [bad anchor](report.md#nowhere)\n");
  write("cells/a=1/cell.md", "# C\n\n[up](../../report.md) [escape](../../../x.md)\n```\n[x](inside-a-fence)\n```\n");
  const LinkReport r = check_links(dir_.string());
  ASSERT_EQ(r.problems.size(), 3u) << describe(r);
  EXPECT_EQ(r.pages.size(), 3u);
  EXPECT_EQ(r.links, 8);  // the https link, the code span and the fenced one are not files
  std::string text = describe(r);
  EXPECT_NE(text.find("report.md:3: cells/a=1/trace.json: no such file"), std::string::npos) << text;
  EXPECT_NE(text.find("appendix.md:5: report.md#nowhere: no heading #nowhere"), std::string::npos) << text;
  EXPECT_NE(text.find("cells/a=1/cell.md:3: ../../../x.md: outside the run directory"), std::string::npos) << text;
}

TEST_F(LinkCheck, AMissingStartPageIsAProblem) {
  const LinkReport r = check_links(dir_.string());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].why, "no such file");
}

TEST(HeadingAnchor, FollowsGithubSlugs) {
  EXPECT_EQ(heading_anchor("Comparison Matrix"), "comparison-matrix");
  EXPECT_EQ(heading_anchor("Against Dense Attention"), "against-dense-attention");
  EXPECT_EQ(heading_anchor("1. crash (`signal`)"), "1-crash-signal");
}

}  // namespace
}  // namespace harness
