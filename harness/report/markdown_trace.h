#pragma once
// One CUDA cell's GPU trace in report.md, from the CUPTI summary the cell
// recorded (CellResult::trace): where GPU time went by kernel and
// by phase, and how often the host waited for the device in each step.
#include <string>

#include "harness/core/results.h"

namespace harness {

// A "### GPU trace: `id`" subsection, or "" when the cell recorded no trace.
std::string render_trace_section(const CellResult& cell);

}  // namespace harness
