#pragma once
// Entry points for the CLI: `nsa-harness run` renders every output of a run;
// `nsa-harness report DIR` loads results.json and renders again.
#include <string>

#include "harness/core/results.h"

namespace harness {

// Reads DIR/results.json. Throws std::runtime_error naming the file on a
// missing file, bad JSON or an unknown outcome/decision.
RunResult load_results(const std::string& dir);

// Writes results.json, junit.xml, loss.svg + step_time.svg (when steps were
// recorded) and report.md into `dir` (created if missing), each atomically.
void render_all(const RunResult& run, const std::string& dir);

}  // namespace harness
