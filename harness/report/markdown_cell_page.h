#pragma once
// cells/<dir>/cell.md: everything the run recorded about one cell, in full —
// outcome, settings, metrics, every finding with its whole evidence (stack
// excerpt, first non-finite record, event tail, kernel tables), the GPU trace,
// crash re-runs, the flight recorder, the repro command and links to the
// cell's own files. report.md links here instead of repeating any of it.
#include <string>

#include "harness/core/results.h"
#include "harness/report/report_links.h"

namespace harness {

std::string render_cell_page(const RunResult& run, const CellResult& cell, const FileExists& exists);

}  // namespace harness
