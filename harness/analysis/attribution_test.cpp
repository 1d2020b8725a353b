#include "harness/analysis/attribution.h"

#include <gtest/gtest.h>

#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;

std::vector<std::string> statements(const std::vector<Attribution>& as) {
  std::vector<std::string> s;
  for (auto& a : as) s.push_back(a.statement);
  return s;
}

// The cells support exactly these attributions, in this order.
void expect_statements(const std::vector<CellResult>& cells, const std::vector<std::string>& want) {
  EXPECT_EQ(statements(attribute(cells)), want);
}

// The cells support exactly one attribution, equal to `want` in every field
// `want` sets (an empty field is not compared).
void expect_one(const std::vector<CellResult>& cells, const Attribution& want) {
  auto as = attribute(cells);
  ASSERT_EQ(as.size(), 1u) << ::testing::PrintToString(statements(as));
  const Attribution& a = as[0];
  if (!want.axis.empty()) EXPECT_EQ(a.axis, want.axis);
  if (!want.failing_value.empty()) EXPECT_EQ(a.failing_value, want.failing_value);
  if (!want.passing_value.empty()) EXPECT_EQ(a.passing_value, want.passing_value);
  EXPECT_EQ(a.statement, want.statement);
  if (!want.cells.empty()) EXPECT_EQ(a.cells, want.cells);
}

// What one cell saw: its outcome, and the reason and step where it failed.
struct Saw {
  Outcome outcome = Outcome::pass;
  std::optional<std::string> reason;
  std::optional<int> step;
};
const Saw kPassed{};
Saw hung_at(int step) { return {Outcome::hang, "stall", step}; }

// Adds the two cells that differ in the prefill axis alone: prefill=sequential,
// then prefill=batched. `axes` holds the prefill entry with an empty value, in
// the place the matrix would put it (the ids depend on the order).
void add_prefill_pair(std::vector<CellResult>& cells, AxisValues axes, const Saw& sequential,
                      const Saw& batched = kPassed) {
  for (auto [mode, saw] : {std::pair{"sequential", &sequential}, std::pair{"batched", &batched}}) {
    for (auto& [k, v] : axes)
      if (k == "prefill") v = mode;
    cells.push_back(make_cell(axes, saw->outcome, saw->reason, saw->step));
  }
}

TEST(Attribution, ConsistentFlipSaysBypassesAndNamesTheFlag) {
  std::vector<CellResult> cells;
  for (const char* len : {"128", "512"}) add_prefill_pair(cells, {{"prefill", ""}, {"seq_len", len}}, hung_at(5));
  // seq_len pairs are both-fail or both-pass: no evidence on that axis.
  expect_one(cells, {"prefill", "sequential", "batched",
                     "prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the hang (stall) at step 5 seen with "
                     "prefill=sequential (NSA_PREFILL_BATCHED=0) in 2 of 2 pairs",
                     {"prefill=sequential,seq_len=128", "prefill=batched,seq_len=128", "prefill=sequential,seq_len=512",
                      "prefill=batched,seq_len=512"}});
}

TEST(Attribution, DifferentStepsAreNotSummarisedAsOne) {
  std::vector<CellResult> cells;
  add_prefill_pair(cells, {{"prefill", ""}, {"seq_len", "128"}}, hung_at(5));
  add_prefill_pair(cells, {{"prefill", ""}, {"seq_len", "512"}}, hung_at(3));
  expect_statements(cells, {"prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the hang (stall) seen with "
                            "prefill=sequential (NSA_PREFILL_BATCHED=0) in 2 of 2 pairs"});
}

// Both tests below have sequential prefill hang at step 5 in two pairs and
// batched prefill pass in one of them; the statement goes on with the other pair.
const std::string kBatchedPassesOneOfTwo =
    "prefill=batched (NSA_PREFILL_BATCHED=1) turns the hang (stall) at step 5 seen with "
    "prefill=sequential (NSA_PREFILL_BATCHED=0) into a pass in only 1 of 2 pairs; of the rest, ";

TEST(Attribution, InconsistentFlipCountsThePairsAndNeverSaysBypasses) {
  std::vector<CellResult> cells;
  add_prefill_pair(cells, {{"prefill", ""}, {"precision", "fp32"}}, hung_at(5));
  add_prefill_pair(cells, {{"prefill", ""}, {"precision", "fp16"}}, hung_at(5), hung_at(5));
  expect_statements(cells, {kBatchedPassesOneOfTwo + "1 fails the same way",
                            "precision=fp32 turns the hang (stall) at step 5 seen with precision=fp16 into a pass in "
                            "only 1 of 2 pairs; of the rest, 1 fails the same way"});
}

TEST(Attribution, TwoAxesTwoBugsAreAttributedSeparately) {
  // Sequential prefill hangs at any precision; batched fp16 goes non-finite.
  std::vector<CellResult> cells{
      make_cell({{"prefill", "sequential"}, {"precision", "bf16"}}, Outcome::hang, "stall", 5),
      make_cell({{"prefill", "sequential"}, {"precision", "fp16"}}, Outcome::hang, "stall", 5),
      make_cell({{"prefill", "batched"}, {"precision", "bf16"}}, Outcome::pass),
      make_cell({{"prefill", "batched"}, {"precision", "fp16"}}, Outcome::fail, "non_finite", 2)};
  expect_statements(cells, {kBatchedPassesOneOfTwo + "1 fails with non_finite",
                            "precision=bf16 bypasses the non-finite values (non_finite) at step 2 seen with "
                            "precision=fp16 in 1 of 1 pairs"});
}

TEST(Attribution, OneFailingValueAmongThreeIsAPartition) {
  std::vector<CellResult> cells;
  for (const char* seq : {"128", "512"})
    for (const char* p : {"fp32", "bf16", "fp16"})
      cells.push_back(make_cell({{"seq_len", seq}, {"precision", p}},
                                std::string(p) == "fp16" ? Outcome::fail : Outcome::pass,
                                std::string(p) == "fp16" ? std::optional<std::string>("non_finite") : std::nullopt, 2));
  expect_one(cells, {"precision", "fp16", "fp32, bf16",
                     "Non-finite values (non_finite) at step 2 only with precision=fp16; fp32 and bf16 pass", {}});
}

TEST(Attribution, SeveralFailingNumericValuesArePhrasedWithAt) {
  std::vector<CellResult> cells{
      make_cell({{"seq_len", "128"}}, Outcome::pass),
      make_cell({{"seq_len", "512"}}, Outcome::fail, "non_finite", 1),
      make_cell({{"seq_len", "1024"}}, Outcome::pass),
      make_cell({{"seq_len", "2048"}}, Outcome::fail, "non_finite", 3)};
  expect_one(cells, {"", "", "", "Non-finite values (non_finite) only at seq_len=512, 2048; 128 and 1024 pass", {}});
}

TEST(Attribution, NoPartitionWhenAPassingValueFailsTheSameWayElsewhere) {
  // fp16 fails at both lengths, but bf16 also fails at 512: "only with fp16" would be false.
  std::vector<CellResult> cells{
      make_cell({{"seq_len", "128"}, {"precision", "fp32"}}, Outcome::pass),
      make_cell({{"seq_len", "128"}, {"precision", "bf16"}}, Outcome::pass),
      make_cell({{"seq_len", "128"}, {"precision", "fp16"}}, Outcome::fail, "non_finite", 2),
      make_cell({{"seq_len", "512"}, {"precision", "fp32"}}, Outcome::pass),
      make_cell({{"seq_len", "512"}, {"precision", "bf16"}}, Outcome::fail, "non_finite", 2),
      make_cell({{"seq_len", "512"}, {"precision", "fp16"}}, Outcome::fail, "non_finite", 2)};
  for (auto& s : statements(attribute(cells))) {
    EXPECT_EQ(s.find(" only with "), std::string::npos) << s;
    EXPECT_EQ(s.find(" only at "), std::string::npos) << s;
  }
}

TEST(Attribution, SkippedCellsFormNoPairs) {
  std::vector<CellResult> cells{make_cell({{"device", "cpu"}}, Outcome::fail, "parity", 1),
                                make_cell({{"device", "cuda"}}, Outcome::skip, "no_cuda")};
  EXPECT_TRUE(attribute(cells).empty());
}

TEST(Attribution, TheFaultAxisIsNeverAttributed) {
  std::vector<CellResult> cells;
  add_prefill_pair(cells, {{"fault", "none"}, {"prefill", ""}}, kPassed);
  add_prefill_pair(cells, {{"fault", "sync_per_token"}, {"prefill", ""}}, {Outcome::slow_step, "slow_host_syncs", 5});
  expect_one(cells, {"prefill", "", "",
                     "prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the slow step (slow_host_syncs) at step 5 seen "
                     "with prefill=sequential (NSA_PREFILL_BATCHED=0) in 1 of 1 pairs",
                     {}});
}

TEST(Attribution, NoFailuresNoStatements) {
  std::vector<CellResult> cells;
  add_prefill_pair(cells, {{"prefill", ""}}, kPassed);
  EXPECT_TRUE(attribute(cells).empty());
}

}  // namespace
}  // namespace harness
