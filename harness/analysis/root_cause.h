#pragma once
// One root cause first (the seeds' shape): the failing cells grouped by the
// finding their failure rests on, each group with what else those cells showed
// (its consequences), the attribution lines about them and whether a setting
// works around it; ordered so that the group the decision rests on comes first.
//
// Order of the groups (the first is "the root cause"):
//   1. a wrong answer (parity, causality, invariant) — never worked around;
//   2. no workaround (it alone makes the run NO-GO) before worked-around ones;
//   3. more cells explained before fewer;
//   4. an earlier step before a later one; then matrix order.
//
// A warning known to lead to the failure (AdamW's eps rounding to 0 before a
// non-finite optimizer update) is named as the group's precursor, not listed as
// a consequence: it is the why of the cause.
//
// Computed on demand from the RunResult (a view for the report; results.json
// keeps the cells, findings and attributions it is built from).
#include <optional>
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

// One finding as seen in several cells (same code, title, step and location).
struct FindingGroup {
  Finding finding;
  std::vector<std::string> cells;
};

struct FailureGroup {
  std::string outcome;  // "hang", "fail", …
  std::string reason;   // reason code
  // The deciding finding; for a failure without one, a finding made from the
  // outcome and exit (title "crash without a recorded finding").
  FindingGroup cause;
  std::optional<FindingGroup> precursor;    // a warning in these cells that leads to this failure
  std::vector<FindingGroup> consequences;   // the other findings in these cells, blocking first
  std::vector<Attribution> attributions;    // statements that name one of these cells
  std::vector<std::string> workarounds;     // "`cell` passes with prefill=batched (…)", one per cell that has one
  std::vector<std::string> faults;          // faults the scenario planted in these cells (the catalogue's)
  bool wrong_answer = false;
  bool worked_around = false;               // every cell of the group has a workaround
};

struct Diagnosis {
  std::vector<FailureGroup> failures;       // [0] is the root cause
  std::vector<FindingGroup> other_warnings; // warnings in cells that did not fail
};

Diagnosis diagnose(const RunResult& run);

}  // namespace harness
