#pragma once
// What the trace processor concludes: the summary records live with the other
// records every stage speaks (core/trace_summary.h, results.json's cell
// "trace"); the trace stage names them as its own.
#include "harness/core/trace_summary.h"
#include "harness/trace/trace_event.h"

namespace harness::trace {
using harness::CorrelationStats;
using harness::KernelRow;
using harness::PhaseRow;
using harness::StepSyncs;
using harness::TraceFile;
using harness::TraceSummary;
}  // namespace harness::trace
