#include "harness/run/dry_run.h"

#include <gtest/gtest.h>

namespace harness::run {
namespace {

CellSpec cell(const std::string& id, int seq_len, unsigned long long seed, const std::string& device) {
  CellSpec c;
  c.id = id;
  c.train.seq_len = seq_len;
  c.train.seed = seed;
  c.device = device;
  return c;
}

// Only what tells the cells apart is listed, and the device always; settings in
// the order the cells first show them (the flag exists only in the second cell).
TEST(DryRun, ListsExactlyTheSettingsThatDifferPlusTheDevice) {
  auto a = cell("a", 32, 7, "cpu"), b = cell("b", 64, 7, "cpu");
  b.flags["NSA_PREFILL_BATCHED"] = "1";
  const CellListing l = list_cells({a, b});
  EXPECT_EQ(l.columns, (std::vector<std::string>{"id", "device", "train.seq_len", "flags.NSA_PREFILL_BATCHED"}));
  ASSERT_EQ(l.rows.size(), 2u);
  EXPECT_EQ(l.rows[0], (std::vector<std::string>{"a", "cpu", "32", "-"}));
  EXPECT_EQ(l.rows[1], (std::vector<std::string>{"b", "cpu", "64", "1"}));
}

TEST(DryRun, OneCellHasNothingThatDiffers) {
  const CellListing l = list_cells({cell("default", 32, 1, "auto")});
  EXPECT_EQ(l.columns, (std::vector<std::string>{"id", "device"}));
  EXPECT_EQ(render_listing(l), "id       device\ndefault  auto\n1 cell(s); nothing was run\n");
}

}  // namespace
}  // namespace harness::run
