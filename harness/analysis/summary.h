#pragma once
// The executive summary, written only from what the run recorded: cell counts
// by outcome, the deciding finding of each failure (title, step, location),
// the attribution statements, the warnings, and what the decision rests on.
// Every sentence is backed by a field of the RunResult; nothing is boilerplate.
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

std::string executive_summary(const RunResult& run);

// The one-page report's summary: the cell counts, the expectations and what
// the decision rests on (the failures themselves are the root cause section's).
std::string short_summary(const RunResult& run);

// "`a`, `b` and 2 more": cell ids for prose, at most `max_shown` by name.
std::string cell_list(const std::vector<std::string>& ids, size_t max_shown = 4);

}  // namespace harness
