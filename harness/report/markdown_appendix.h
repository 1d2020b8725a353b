#pragma once
// appendix.md, beside report.md: the detail the one-page report leaves out —
// the whole comparison matrix, settings, every attribution with its cells, an
// index of every finding (its evidence on the cell's page), skipped cells,
// acceptance gates, every repro command, the run's files and every next action.
#include <string>

#include "harness/core/results.h"
#include "harness/report/report_links.h"

namespace harness {

std::string render_appendix(const RunResult& run, const FileExists& exists);

}  // namespace harness
