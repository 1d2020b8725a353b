#pragma once
// The whole analysis stage in one call: fills a RunResult's attributions,
// gate checks, decision, summary and next actions from its cells.
#include "harness/core/results.h"

namespace harness {

void analyze(RunResult& run);

}  // namespace harness
