// The Ranks section and the typed distributed record in results.json.
#include "harness/report/markdown_ranks.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

CellResult hung_cell() {
  CellResult c;
  c.id = "fault=rank_skips_allreduce,world_size=2";
  c.outcome = Outcome::hang;
  c.reason = "collective_mismatch";
  DistributedFacts d;
  d.world_size = 2;
  d.backend = "gloo";
  RankFacts r0;
  r0.rank = 0;
  r0.outcome = "hang";
  r0.steps_completed = 5;
  r0.last_completed_seq = 36;
  r0.pending = CollectiveRef{37, "allreduce", 6, 0};
  RankFacts r1;
  r1.rank = 1;
  r1.outcome = "stopped";
  r1.steps_completed = 6;
  r1.compute_ms_median = 42.0;
  r1.phase = "final_barrier";
  d.ranks = {r0, r1};
  CollectiveStall st;
  st.kind = "mismatch";
  st.rank = 1;
  st.collective = CollectiveRef{34, "allreduce", 3, 0};
  st.rank_issued = CollectiveRef{34, "allreduce", 4, 0};
  st.waiting_ranks = {0};
  st.waiting_in = CollectiveRef{37, "allreduce", 6, 0};
  st.rank_last_step = 6;
  d.stall = st;
  d.desync = RankDesync{1, {1}, 3, {0}, 1.5, 1.25, /*last_agreeing_step=*/2};
  d.stragglers = {Straggler{1, 450, 100, 4, 4.5}};
  c.distributed = d;
  return c;
}

TEST(MarkdownRanks, NamesStuckDivergingAndStragglingRanks) {
  RunResult run;
  run.cells = {hung_cell()};
  const std::string md = render_ranks_section(run);
  EXPECT_NE(md.find("| 0 | hang | 5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("allreduce #37 (step 6, bucket 0)"), std::string::npos) << md;
  EXPECT_NE(md.find("| phase final_barrier |"), std::string::npos) << md;
  EXPECT_NE(md.find("rank 1 skipped allreduce #34 (step 3, bucket 0)"), std::string::npos) << md;
  EXPECT_NE(md.find("rank(s) 0 wait in allreduce #37"), std::string::npos) << md;
  EXPECT_NE(md.find("rank(s) 1 differ from rank(s) 0 from step 3"), std::string::npos) << md;
  EXPECT_NE(md.find("**Straggler:** rank 1"), std::string::npos) << md;
}

// Sampled checksums: the ranks last agreed after step 1 and differ at step 10,
// so the diverging update is one of steps 2-10, said as that range.
TEST(MarkdownRanks, SampledDesyncIsARange) {
  CellResult c = hung_cell();
  c.distributed->desync = RankDesync{1, {1}, 10, {0}, 1.5, 1.25, /*last_agreeing_step=*/1};
  RunResult run;
  run.cells = {c};
  const std::string md = render_ranks_section(run);
  EXPECT_NE(md.find("rank(s) 1 differ from rank(s) 0 between step 2 and 10 (sampled parameter checksums)"), std::string::npos)
      << md;
}

TEST(MarkdownRanks, EmptyWithoutDistributedCells) {
  RunResult run;
  run.cells = {CellResult{}};
  EXPECT_EQ(render_ranks_section(run), "");
}

TEST(DistributedJson, TypedFieldsRoundTrip) {
  const CellResult c = hung_cell();
  const nlohmann::json j = c;
  const auto& d = j.at("distributed");
  EXPECT_EQ(d.at("stall").at("rank"), 1);
  EXPECT_EQ(d.at("stall").at("collective").at("seq"), 34);
  EXPECT_EQ(d.at("stall").at("collective").at("step"), 3);
  EXPECT_EQ(d.at("desync").at("first_step"), 3);
  EXPECT_EQ(d.at("stragglers").at(0).at("rank"), 1);
  EXPECT_EQ(d.at("ranks").at(0).at("pending").at("op"), "allreduce");
  const CellResult back = j.get<CellResult>();
  ASSERT_TRUE(back.distributed);
  EXPECT_EQ(nlohmann::json(*back.distributed), d);
  EXPECT_FALSE(nlohmann::json(CellResult{}).contains("distributed"));
}

}  // namespace
}  // namespace harness
