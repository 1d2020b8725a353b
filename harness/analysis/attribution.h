#pragma once
// Differential attribution across the matrix (DESIGN §5 "what decides the
// outcome"). For each axis, cells identical in every other axis form pairs;
// where the cell with one value fails and the cell with another passes, the
// flip is evidence. Evidence is aggregated per (axis, failing value, passing
// value, failure reason) and phrased from the counts:
//
//   every pair agrees   "prefill=batched (NSA_PREFILL_BATCHED=1) bypasses the hang (stall)
//                        at step 5 seen with prefill=sequential (NSA_PREFILL_BATCHED=0) in 2 of 2 pairs"
//   some pairs agree    "... turns ... into a pass in only 1 of 2 pairs; in the rest ..."
//   a clean partition   "non-finite values (non_finite) only with precision=fp16; bf16 and fp32 pass"
//                       (≥ 2 value pairs, all consistent, and no cell with a passing value
//                        fails for the same reason anywhere in the matrix)
//
// The `fault` axis is never attributed (the analysis does not read which faults
// are on). Skipped cells take part in no pair. A pass that misses a gate counts as a
// failure (judgement.h).
#include <vector>

#include "harness/core/results.h"

namespace harness {

std::vector<Attribution> attribute(const std::vector<CellResult>& cells);

}  // namespace harness
