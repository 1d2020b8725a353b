#pragma once
// The top of report.md after the summary: "## Root Cause" — the one failure
// the decision rests on (diagnose(), root_cause.h), its evidence, the cells it
// explains, what else those cells showed (grouped under it as consequences),
// the setting that works around it — then "## Other Failures", one line each.
// Full evidence (stacks, event tails, kernel tables) is on each cell's page.
#include <string>

#include "harness/analysis/root_cause.h"
#include "harness/core/results.h"

namespace harness {

// "" when nothing failed.
std::string render_root_cause(const Diagnosis& d);
std::string render_other_failures(const Diagnosis& d);

}  // namespace harness
