#pragma once
// The distributed diagnosis of one world_size > 1 cell: the ranks' streams in,
// typed facts (core/distributed.h) and findings out. Findings:
//   collective_mismatch / collective_stall (blocking) — from collective_match.h
//   rank_desync (blocking)                            — parameter checksums differ
//   straggler (warning)                               — one rank's work is slower
#include <vector>

#include "harness/supervisor/distributed/rank_stream.h"
#include "harness/core/results.h"

namespace harness::supervisor::dist {

struct RankDiagnosis {
  DistributedFacts facts;          // ranks[] carry the streams' facts; outcome/steps are the caller's
  std::vector<Finding> findings;   // most decisive first
};

RankDiagnosis diagnose_ranks(const std::vector<RankStream>& ranks);

std::string describe(const CollectiveRef& c);  // "allreduce #12 (step 3, bucket 0)"
// "at step 3", or "between step 2 and 10" when the checksums sampled skipped the steps in between.
std::string desync_when(const RankDesync& d);

}  // namespace harness::supervisor::dist
