#pragma once
// How the analysis judges one cell: passed, failed (and by what), or skipped.
// A cell the supervisor classified as `pass` that misses an acceptance gate
// counts as failed here: a report must never say GO beside a ❌ gate.
#include <string>

#include "harness/core/results.h"

namespace harness {

struct Judgement {
  enum class Kind { pass, fail, skip };
  Kind kind = Kind::pass;
  std::string outcome;  // "hang", "fail", … ("fail" for an unmet gate)
  std::string reason;   // reason code; the outcome name when the cell carries none
  const Finding* deciding = nullptr;  // the finding the failure rests on, when there is one
};

Judgement judge(const CellResult& cell);

// Reasons that rest on time alone (a slow step, a step-time or throughput
// gate): on a shared machine they may be the machine's, so they are confirmed
// by a re-run before they stand, and compared only beyond the noise.
bool is_timing_reason(const std::string& reason);
// The cell failed, and only for timing reasons (no other blocking finding).
bool fails_on_timing_only(const CellResult& cell);

// "hang", "non-finite values", "parity mismatch": the noun for a failure in prose.
std::string failure_noun(const std::string& outcome, const std::string& reason);

// "the hang (stall) at step 5" / "the non-finite values (non_finite)".
std::string describe_failure(const Judgement& j);

}  // namespace harness
