// Slicing a matrix: every cell in exactly one slice, stable, and --shard checked.
#include "harness/run/shard.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "harness/testing/cells.h"

namespace harness::run {
namespace {

std::vector<CellSpec> cells(const std::vector<std::string>& ids) { return testing::cells_with_ids(ids); }
std::vector<std::string> ids(const std::vector<CellSpec>& cs) { return testing::each(cs, &CellSpec::id); }

TEST(ParseShard, AcceptsIOverN) {
  auto s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
}

TEST(ParseShard, RefusesWithTheReason) {
  auto message = [](const char* text) {
    try {
      parse_shard(text);
    } catch (const ShardError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("3/3"), "--shard '3/3': I must be in 0..2 (slices count from 0)");
  EXPECT_EQ(message("0/0"), "--shard '0/0': N must be at least 1");
  EXPECT_EQ(message("1"), "--shard '1': expected I/N, e.g. 0/4 for the first of four slices");
  EXPECT_EQ(message("-1/2"), "--shard '-1/2': I must be in 0..1 (slices count from 0)");
  EXPECT_EQ(message("a/2"), "--shard 'a/2': expected I/N, e.g. 0/4 for the first of four slices");
}

TEST(ShardCells, EveryCellInExactlyOneSliceInScenarioOrder) {
  auto all = cells({"p=b,s=2", "p=a,s=1", "p=b,s=1", "p=a,s=2", "p=c,s=1"});
  std::multiset<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto part = shard_cells(all, {i, 3});
    EXPECT_GE(part.size(), 1u);
    EXPECT_LE(part.size(), 2u);
    for (auto& c : part) seen.insert(c.id);
    // Order within a slice is the scenario's.
    auto order = ids(part);
    auto in_all = ids(all);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [&](auto& a, auto& b) {
      return std::find(in_all.begin(), in_all.end(), a) < std::find(in_all.begin(), in_all.end(), b);
    }));
  }
  const auto every = ids(all);
  EXPECT_EQ(seen, std::multiset<std::string>(every.begin(), every.end()));
}

TEST(ShardCells, DependsOnTheIdsNotTheirOrder) {
  auto a = cells({"x=1", "x=2", "x=3", "x=4"});
  auto b = cells({"x=4", "x=2", "x=3", "x=1"});
  auto sa = ids(shard_cells(a, {1, 2})), sb = ids(shard_cells(b, {1, 2}));
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  EXPECT_EQ(sa, sb);
  EXPECT_EQ(sa, (std::vector<std::string>{"x=2", "x=4"}));  // round-robin over the sorted ids
}

TEST(ShardInfo, RecordsTheWholeMatrixAndIdentity) {
  auto info = shard_info(cells({"a", "b"}), {1, 2}, "h123", "abc");
  EXPECT_EQ(info.matrix_cells, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(info.index, 1);
  EXPECT_EQ(info.scenario_hash, "h123");
  EXPECT_EQ(info.revision, "abc");
}

}  // namespace
}  // namespace harness::run
