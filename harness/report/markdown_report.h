#pragma once
// report.md, in the shape of the hand-written seed reports (DESIGN §5), one
// page up top and the detail one link away:
//
//   # <date> Test Engineer Report - <scenario name>
//   **Date** / **Platform** / **Revision** / **Scenario** / **Command** / **Decision**
//   ## Executive Summary     cell counts, expectations, what the decision rests on
//   ## Root Cause            the one failure the decision rests on, its evidence, the
//                            cells it explains, its consequences, its workaround
//   ## Other Failures        independent failures, one line each
//   ## Comparison Matrix     every cell (a large matrix: the failing ones), linked to cell pages
//   ## Warnings / Acceptance Gates (unmet) / Observation Cost / Against Dense Attention
//   ## Reproduce             one repro command per failure
//   ## Charts / Next Actions (the first few) / Appendices
//
// appendix.md (markdown_appendix.h) and cells/<dir>/cell.md (markdown_cell_page.h)
// hold every other fact; MarkdownWriter writes all three. Missing facts print
// "n/a"; nothing is invented.
#include <string>

#include "harness/core/results.h"

namespace harness {

std::string render_markdown(const RunResult& run);

// True when some cell recorded steps: the chart writer draws, the report links.
bool has_step_data(const RunResult& run);

}  // namespace harness
