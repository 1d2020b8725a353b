#pragma once
// The "## Ranks" section of report.md, for world_size > 1 cells: each rank's
// facts side by side (outcome, steps, own work vs waiting, the collective it
// was blocked in) and, in one line each, which rank is stuck, diverging or
// straggling. Empty when no cell ran more than one rank.
#include <string>

#include "harness/core/results.h"

namespace harness {

std::string render_ranks_section(const RunResult& run);

}  // namespace harness
