#pragma once
// How the run itself ended, for the top of report.md: a cancelled run or a
// harness failure carries no verdict on the scenario, and the cells it did
// not finish are listed as not run (never as an outcome). Also what --resume
// took as it was and what it re-ran because the cell's spec had changed.
#include <string>

#include "harness/core/results.h"

namespace harness {

// The decision line's text: "**GO** ✅"-style for a complete run is the
// caller's; for an incomplete run, "no verdict" and why.
bool run_is_complete(const RunResult& r);
std::string incomplete_decision_line(const RunResult& r, const std::string& finished_decision);

// A block quote opening the report, or "" for a complete run that resumed nothing.
std::string completion_banner(const RunResult& r);

// "## Not Run" body: the cells without a result, and how to finish them; "" when none.
std::string not_run_section(const RunResult& r);

}  // namespace harness
