#pragma once
// report.md, in the shape of the hand-written seed reports (DESIGN §5):
//
//   # <date> Test Engineer Report - <scenario name>
//   **Date** / **Platform** (GPU, SM, driver, CUDA, libtorch) / **Revision** (git,
//   scenario hash) / **Scenario** / **Command** / **Decision**
//   ## Executive Summary        the RunResult's summary
//   ## Comparison Matrix        cells × outcome, reason, steps, last loss, tok/s, step ms
//   ## What Decides the Outcome attributions
//   ## Findings                 one subsection per blocking finding (grouped across
//                               cells), warnings in one table, kernel tables, skips
//   ## Acceptance Gates         gate, cell, required, measured, ✅/❌
//   ## Reproduce                the repro command of every failing cell
//   ## Charts                   loss.svg, step_time.svg (when steps were recorded)
//   ## Artifacts                run files and per-cell paths
//   ## Next Actions
//
// Missing facts print "n/a"; nothing is invented.
#include <string>

#include "harness/core/results.h"

namespace harness {

std::string render_markdown(const RunResult& run);

// True when some cell recorded steps: the chart writer draws, the report links.
bool has_step_data(const RunResult& run);

}  // namespace harness
