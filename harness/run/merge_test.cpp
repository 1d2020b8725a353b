// Joining shards: one matrix only, each cell once, and what no shard ran is
// missing — never a pass, never GO.
#include "harness/run/merge.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/analysis/analyze.h"
#include "harness/report/markdown_report.h"
#include "harness/report/render_all.h"
#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using ::testing::HasSubstr;
const std::vector<std::string> kMatrix = {"x=1", "x=2", "x=3"};

RunResult shard(int index, std::vector<std::string> ids) {
  RunResult r;
  r.scenario = {{"name", "tiny"}, {"hash", "h1"}};
  r.shard = ShardInfo{index, 2, kMatrix, "h1", "rev1"};
  r.started_at = index == 0 ? "2026-01-01T00:00:05Z" : "2026-01-01T00:00:01Z";
  for (auto& id : ids) {
    CellResult c;
    c.id = id;
    c.axes = {{"x", id.substr(2)}};
    c.steps_completed = c.steps_planned = 2;
    r.cells.push_back(c);
  }
  return r;
}

std::string refusal(const std::vector<ShardRun>& shards) {
  try {
    merge_shards(shards);
  } catch (const MergeRefused& e) {
    return e.what();
  }
  return "merged";
}

TEST(MergeShards, CellsInMatrixOrderFromEveryShard) {
  RunResult m = merge_shards({{"s0", shard(0, {"x=1", "x=3"})}, {"s1", shard(1, {"x=2"})}});
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[0].id, "x=1");
  EXPECT_EQ(m.cells[1].id, "x=2");
  EXPECT_EQ(m.completion.end, RunEnd::complete);
  EXPECT_FALSE(m.shard);
  ASSERT_EQ(m.merged_from.size(), 2u);
  EXPECT_EQ(m.merged_from[1].cells, 1);
  EXPECT_EQ(m.started_at, "2026-01-01T00:00:01Z");  // the earliest shard
  analyze(m);
  EXPECT_EQ(m.decision, Decision::go);
}

TEST(MergeShards, CellsInNoShardAreMissingAndTheDecisionIsNoGo) {
  // Shard 1 never wrote results.json.
  RunResult m = merge_shards({{"s0", shard(0, {"x=1", "x=3"})}, {"s1", std::nullopt}});
  EXPECT_EQ(m.completion.end, RunEnd::cells_missing);
  EXPECT_EQ(m.completion.not_run, (std::vector<std::string>{"x=2"}));
  analyze(m);
  EXPECT_EQ(m.decision, Decision::no_go);
  const std::string md = render_markdown(m);
  EXPECT_THAT(md, HasSubstr("| `x=2` | ❔ missing | in no shard |"));
  EXPECT_THAT(md, HasSubstr("**Decision**: **no verdict** — 1 of 3 cells are missing from every shard"));
  EXPECT_THAT(md, HasSubstr("## Missing"));
  EXPECT_THAT(m.summary, HasSubstr("1 cell is in no shard (`x=2`)"));
}

TEST(MergeShards, RefusesShardsOfAnotherScenarioOrHarness) {
  RunResult other = shard(1, {"x=2"});
  other.shard->scenario_hash = "h2";
  EXPECT_THAT(refusal({{"s0", shard(0, {"x=1"})}, {"s1", other}}),
              HasSubstr("s0 and s1 are shards of different runs: scenario hash h1 (tiny) vs h2 (tiny)"));
  other = shard(1, {"x=2"});
  other.shard->revision = "rev2";
  EXPECT_THAT(refusal({{"s0", shard(0, {"x=1"})}, {"s1", other}}), HasSubstr("harness revision rev1 vs rev2"));
  other = shard(1, {"x=2"});
  other.shard->count = 3;
  EXPECT_THAT(refusal({{"s0", shard(0, {"x=1"})}, {"s1", other}}), HasSubstr("slice count 2 vs 3"));
}

TEST(MergeShards, RefusesDuplicatesAndRunsThatAreNoShard) {
  EXPECT_THAT(refusal({{"s0", shard(0, {"x=1"})}, {"s1", shard(0, {"x=1"})}}), HasSubstr("are both shard 0/2"));
  RunResult whole = shard(0, {"x=1"});
  whole.shard.reset();
  EXPECT_THAT(refusal({{"w", whole}}), HasSubstr("w/results.json is not a shard"));
  EXPECT_THAT(refusal({{"a", std::nullopt}}), HasSubstr("nothing to merge"));
}

TEST(MergeShards, OutputInsideAShardIsRefused) {
  harness::testing::TempDir dir;
  const std::string s0 = (dir.path() / "s0").string();
  EXPECT_THROW(check_merge_output({s0}, s0 + "/merged"), MergeRefused);
  EXPECT_THROW(check_merge_output({s0}, s0), MergeRefused);
  EXPECT_NO_THROW(check_merge_output({s0}, dir.str()));  // shards inside the output: the Slurm layout
}

TEST(MergeShards, ReadsResultsAndCopiesCellDirectories) {
  harness::testing::TempDir dir;
  const auto s0 = dir.path() / "s0", s1 = dir.path() / "s1", out = dir.path() / "out";
  render_all(shard(0, {"x=1", "x=3"}), s0.string());
  std::filesystem::create_directories(s0 / "cells" / "x=1");
  std::ofstream(s0 / "cells" / "x=1" / "events.jsonl") << "{}\n";
  std::filesystem::create_directories(s1);  // a shard that never finished
  auto shards = read_shards({s0.string(), s1.string()});
  ASSERT_TRUE(shards[0].result);
  EXPECT_FALSE(shards[1].result);
  RunResult m = merge_shards(shards);
  copy_merged_cells(m, shards, out.string());
  EXPECT_TRUE(std::filesystem::exists(out / "cells" / "x=1" / "events.jsonl"));
  EXPECT_THROW(read_shards({(dir.path() / "nope").string()}), MergeRefused);
}

}  // namespace
}  // namespace harness::run
