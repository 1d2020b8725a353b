// The distributed diagnosis from synthetic per-rank event streams: each test
// writes the events two or three ranks would have written and checks which
// rank, collective and step the analysis names.
#include "harness/supervisor/distributed/rank_diagnosis.h"

#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

namespace harness::supervisor::dist {
namespace {
using nlohmann::json;

// Builds one rank's events.jsonl text.
class Stream {
 public:
  explicit Stream(int rank) : rank_(rank) { add({{"ev", "start"}, {"device", "cpu"}}); }
  Stream& add(json e) {
    out_ << e.dump() << "\n";
    return *this;
  }
  // A collective through the states given (scheduled, started, completed).
  Stream& coll(int64_t seq, int step, int states = 3, const std::string& op = "allreduce") {
    static const char* names[] = {"scheduled", "started", "completed"};
    for (int s = 0; s < states; ++s)
      add({{"ev", "collective"}, {"rank", rank_}, {"seq", seq}, {"op", op}, {"step", step}, {"bucket", 0},
           {"state", names[s]}});
    return *this;
  }
  Stream& step(int k) {
    add({{"ev", "step_begin"}, {"step", k}});
    return *this;
  }
  Stream& end(int k, double step_ms, double comm_ms, double checksum = 1.0) {
    add({{"ev", "step_end"}, {"step", k}, {"step_ms", step_ms}, {"comm_ms", comm_ms}});
    add({{"ev", "checksum"}, {"rank", rank_}, {"step", k}, {"sum", checksum}, {"sq", 2.0}});
    return *this;
  }
  RankStream read() {
    std::istringstream in(out_.str());
    return read_rank_stream(rank_, in);
  }

 private:
  int rank_;
  std::ostringstream out_;
};

// A clean run of `steps` steps: a broadcast (seq 1), then one all-reduce per step (seq = step + 1).
Stream clean(int rank, int steps, double ms = 100, double comm = 10) {
  Stream s(rank);
  s.coll(1, 0, 3, "broadcast");
  for (int k = 1; k <= steps; ++k) s.step(k).coll(k + 1, k).end(k, ms, comm);
  s.add({{"ev", "done"}});
  return s;
}

TEST(RankDiagnosis, CleanRanksFindNothing) {
  auto d = diagnose_ranks({clean(0, 6).read(), clean(1, 6).read()});
  EXPECT_TRUE(d.findings.empty());
  EXPECT_FALSE(d.facts.stall);
  EXPECT_FALSE(d.facts.desync);
  EXPECT_TRUE(d.facts.stragglers.empty());
  ASSERT_EQ(d.facts.ranks.size(), 2u);
  EXPECT_EQ(d.facts.ranks[1].last_completed_seq, 7);
  EXPECT_FALSE(d.facts.ranks[1].pending);
}

TEST(RankDiagnosis, SkippedAllreduceIsAMismatchNamingRankSeqAndStep) {
  // Rank 1 leaves step 3's all-reduce out: its step-4 all-reduce pairs with
  // rank 0's step 3 (seq 4), and so on; rank 0 waits forever in seq 7 (step 6).
  Stream r0(0), r1(1);
  r0.coll(1, 0, 3, "broadcast");
  r1.coll(1, 0, 3, "broadcast");
  for (int k = 1; k <= 6; ++k) r0.step(k).coll(k + 1, k, k == 6 ? 2 : 3);
  for (int k = 1; k <= 6; ++k) {
    r1.step(k);
    if (k < 3) r1.coll(k + 1, k);
    if (k > 3) r1.coll(k, k);
  }
  auto d = diagnose_ranks({r0.read(), r1.read()});
  ASSERT_TRUE(d.facts.stall);
  EXPECT_EQ(d.facts.stall->kind, "mismatch");
  EXPECT_EQ(d.facts.stall->rank, 1);
  EXPECT_EQ(d.facts.stall->collective.seq, 4);
  EXPECT_EQ(d.facts.stall->collective.step, 3);
  EXPECT_EQ(d.facts.stall->collective.op, "allreduce");
  ASSERT_TRUE(d.facts.stall->rank_issued);
  EXPECT_EQ(d.facts.stall->rank_issued->step, 4);
  EXPECT_EQ(d.facts.stall->waiting_ranks, std::vector<int>{0});
  ASSERT_TRUE(d.facts.stall->waiting_in);
  EXPECT_EQ(d.facts.stall->waiting_in->seq, 7);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].code, "collective_mismatch");
  EXPECT_EQ(d.findings[0].step, 3);
  EXPECT_NE(d.findings[0].title.find("rank 1"), std::string::npos);
}

TEST(RankDiagnosis, RankThatNeverArrivesIsNamedWithTheRanksWaitingForIt) {
  // Three ranks; rank 2 is stuck in step 4's backward and never issues seq 5,
  // which ranks 0 and 1 started and wait in.
  Stream r0(0), r1(1), r2(2);
  for (auto* r : {&r0, &r1, &r2}) {
    r->coll(1, 0, 3, "broadcast");
    for (int k = 1; k <= 3; ++k) r->step(k).coll(k + 1, k).end(k, 100, 10);
    r->step(4);
  }
  r0.coll(5, 4, 2);
  r1.coll(5, 4, 2);
  r2.add({{"ev", "phase_begin"}, {"name", "backward"}, {"step", 4}});
  auto d = diagnose_ranks({r0.read(), r1.read(), r2.read()});
  ASSERT_TRUE(d.facts.stall);
  EXPECT_EQ(d.facts.stall->kind, "not_reached");
  EXPECT_EQ(d.facts.stall->rank, 2);
  EXPECT_EQ(d.facts.stall->collective.seq, 5);
  EXPECT_EQ(d.facts.stall->collective.step, 4);
  EXPECT_EQ(d.facts.stall->waiting_ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.findings.at(0).code, "collective_stall");
  EXPECT_EQ(d.facts.ranks[0].pending->seq, 5);
  EXPECT_EQ(d.facts.ranks[2].phase, "backward");
  EXPECT_FALSE(d.facts.ranks[2].pending);
}

TEST(RankDiagnosis, ACollectiveThatFailedWhenThePeerDiedIsWhereTheRankWaited) {
  // Rank 1 died before seq 3; rank 0's all-reduce then failed (connection closed).
  Stream r0(0), r1(1);
  r0.coll(1, 0, 3, "broadcast").step(1).coll(2, 1).end(1, 100, 10).step(2).coll(3, 2, 2);
  r0.add({{"ev", "collective"}, {"rank", 0}, {"seq", 3}, {"op", "allreduce"}, {"step", 2}, {"bucket", 0},
          {"state", "failed"}});
  r1.coll(1, 0, 3, "broadcast").step(1).coll(2, 1).end(1, 100, 10).step(2);
  auto d = diagnose_ranks({r0.read(), r1.read()});
  ASSERT_TRUE(d.facts.stall);
  EXPECT_EQ(d.facts.stall->kind, "not_reached");
  EXPECT_EQ(d.facts.stall->rank, 1);
  EXPECT_EQ(d.facts.stall->waiting_ranks, std::vector<int>{0});
  ASSERT_TRUE(d.facts.ranks[0].pending);
  EXPECT_EQ(d.facts.ranks[0].pending->seq, 3);
}

TEST(RankDiagnosis, DivergingChecksumNamesRankAndFirstStep) {
  Stream r0(0), r1(1), r2(2);
  for (int k = 1; k <= 5; ++k) {
    r0.step(k).end(k, 100, 10, 1.0 + k);
    r1.step(k).end(k, 100, 10, 1.0 + k + (k >= 3 ? 1e-3 : 0.0));
    r2.step(k).end(k, 100, 10, 1.0 + k);
  }
  auto d = diagnose_ranks({r0.read(), r1.read(), r2.read()});
  ASSERT_TRUE(d.facts.desync);
  EXPECT_EQ(d.facts.desync->rank, 1);
  EXPECT_EQ(d.facts.desync->first_step, 3);
  EXPECT_EQ(d.facts.desync->reference_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(d.findings.at(0).code, "rank_desync");
}

// Checksums sampled at steps 1, 4, 8 and 10 (the checksum probe with every 4
// over 10 steps) while rank 1's update diverged at step 6: the analysis can
// only bound it, and the bound must hold the true step: after step 4 (the
// last sample that agreed), by step 8 (the first that did not).
TEST(RankDiagnosis, SampledChecksumsBoundTheDivergingStep) {
  const int diverged_at = 6;
  Stream r0(0), r1(1);
  for (int k : {1, 4, 8, 10}) {
    r0.step(k).end(k, 100, 10, 1.0 + k);
    r1.step(k).end(k, 100, 10, 1.0 + k + (k >= diverged_at ? 1e-3 : 0.0));
  }
  auto d = diagnose_ranks({r0.read(), r1.read()});
  ASSERT_TRUE(d.facts.desync);
  EXPECT_EQ(d.facts.desync->rank, 1);
  EXPECT_EQ(d.facts.desync->first_step, 8);
  EXPECT_EQ(d.facts.desync->last_agreeing_step, 4);
  EXPECT_LT(d.facts.desync->last_agreeing_step, diverged_at);
  EXPECT_GE(d.facts.desync->first_step, diverged_at);
  EXPECT_NE(d.findings.at(0).title.find("between step 5 and 8"), std::string::npos) << d.findings.at(0).title;
}

// Every step sampled: the bound is the step itself, said as one step.
TEST(RankDiagnosis, EveryStepSampledNamesTheExactStep) {
  Stream r0(0), r1(1);
  for (int k = 1; k <= 5; ++k) {
    r0.step(k).end(k, 100, 10, 1.0 + k);
    r1.step(k).end(k, 100, 10, 1.0 + k + (k >= 3 ? 1e-3 : 0.0));
  }
  auto d = diagnose_ranks({r0.read(), r1.read()});
  ASSERT_TRUE(d.facts.desync);
  EXPECT_EQ(d.facts.desync->first_step, 3);
  EXPECT_EQ(d.facts.desync->last_agreeing_step, 2);
  EXPECT_NE(d.findings.at(0).title.find("at step 3"), std::string::npos) << d.findings.at(0).title;
}

TEST(RankDiagnosis, TwoRanksTieGoesToRankZero) {
  Stream r0(0), r1(1);
  for (int k = 1; k <= 4; ++k) {
    r0.step(k).end(k, 100, 10, 5.0);
    r1.step(k).end(k, 100, 10, k >= 2 ? 5.5 : 5.0);
  }
  auto d = diagnose_ranks({r0.read(), r1.read()});
  ASSERT_TRUE(d.facts.desync);
  EXPECT_EQ(d.facts.desync->rank, 1);
  EXPECT_EQ(d.facts.desync->first_step, 2);
}

TEST(RankDiagnosis, StragglerIsTheRankWhoseOwnWorkIsSlow) {
  // Every rank's step takes ~500 ms (they wait for each other); rank 1's own
  // work is 450 ms, the others' ~100 ms with a few ms of noise.
  Stream r0(0), r1(1), r2(2);
  for (int k = 1; k <= 8; ++k) {
    const double jitter = (k % 3) * 3.0;
    r0.step(k).end(k, 500 + jitter, 400);
    r1.step(k).end(k, 500 + jitter, 50);
    r2.step(k).end(k, 500 - jitter, 395);
  }
  auto d = diagnose_ranks({r0.read(), r1.read(), r2.read()});
  ASSERT_EQ(d.facts.stragglers.size(), 1u);
  EXPECT_EQ(d.facts.stragglers[0].rank, 1);
  EXPECT_GT(d.facts.stragglers[0].factor, 3.0);
  EXPECT_EQ(d.findings.at(0).code, "straggler");
  EXPECT_EQ(d.findings.at(0).severity, Severity::warning);
}

TEST(RankDiagnosis, NoisyButEvenRanksAreNoStragglers) {
  Stream r0(0), r1(1);
  for (int k = 1; k <= 10; ++k) {
    r0.step(k).end(k, 100 + (k % 2) * 40, 10);
    r1.step(k).end(k, 120 + (k % 3) * 30, 10);
  }
  EXPECT_TRUE(diagnose_ranks({r0.read(), r1.read()}).facts.stragglers.empty());
}

TEST(RankDiagnosis, TornLinesAndForeignEventsAreSkipped) {
  std::istringstream in(
      "{\"ev\":\"collective\",\"seq\":1,\"op\":\"allreduce\",\"step\":1,\"state\":\"started\"}\n"
      "{\"ev\":\"collective\",\"seq\":\"x\"}\nnot json\n{\"ev\":\"mystery\"}\n{\"ev\":\"collec");
  auto r = read_rank_stream(0, in);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].state, "started");
}

}  // namespace
}  // namespace harness::supervisor::dist
