#pragma once
// Failures of the harness, not of the model: the run directory cannot be
// written (a full disk, no permission), the child binary cannot be started.
// Such a cell has no verdict at all; recording it as a crash would dress the
// machine's problem up as a model finding (a full disk once read NO-GO).
// The run stops and exits 4 with the one-line cause.
#include <optional>
#include <string>

#include "harness/core/results.h"
#include "harness/supervisor/watchdog.h"

namespace harness::run {

struct HarnessFailure {
  std::string cell;   // the cell it struck
  std::string cause;  // one line: what failed, where, and the system's reason
};

// Why `run` (already classified as `result`) failed because of the harness, or
// nothing when its outcome is the model's. Harness causes: preparing the cell
// or starting the child failed (launch_error); or the cell failed while the
// file system holding its directory is full, or its child reported running
// out of space (ENOSPC, EDQUOT) — it could not write its own events.
std::optional<std::string> harness_cause(const supervisor::SupervisedRun& run, const CellResult& result);

// The file system holding `dir` has no space left for an unprivileged writer.
bool file_system_full(const std::string& dir);

}  // namespace harness::run
