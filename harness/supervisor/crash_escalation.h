#pragma once
// Crash escalation. A cell that died of a CUDA error names, at best, the last
// kernel *launched*: kernels run asynchronously, so the one that faulted may be
// several launches back, and the error surfaces at whatever API call comes
// next. The same cell is therefore run again, twice, in sub-directories of its
// own cell directory:
//   1. CUDA_LAUNCH_BLOCKING=1 — every launch waits for its kernel, so the error
//      is raised at the faulting launch and the flight recorder's last kernel is
//      the culprit;
//   2. compute-sanitizer memcheck (when installed), with PyTorch's caching
//      allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: an access past a tensor
//      then leaves every allocation instead of landing in a cached neighbour),
//      which names the kernel, the access and the source line itself.
// Both results attach to the original cell's row: its deciding finding gets
// an escalation table and is re-located to the kernel they confirm. The cell's
// outcome never changes (it crashed; the re-runs only say where).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/supervisor/sanitizer_log.h"

namespace harness::supervisor {

struct EscalationOptions {
  bool enabled = true;
  std::string sanitizer;           // compute-sanitizer path; "" = none installed (memcheck step skipped)
  double sanitizer_slowdown = 20;  // the cell's deadlines are stretched this much under memcheck
};

// One re-run: how to launch it and where.
struct EscalationAttempt {
  std::string mode;                         // "launch_blocking" | "memcheck"
  std::string label;                        // "CUDA_LAUNCH_BLOCKING=1", "compute-sanitizer memcheck"
  std::string subdir;                       // relative to the cell dir: "escalation/<mode>"
  CellSpec cell;                            // the cell as re-run (deadlines stretched, no expectation)
  std::map<std::string, std::string> env;   // added to the child's environment
  std::vector<std::string> drop_env;        // names the runner must not pass on (its own additions)
  std::vector<std::string> argv_prefix;     // the tool that wraps the child (memcheck), else empty
  std::string sanitizer_log;                // memcheck: file name of the tool's log inside the attempt dir
};

// True for results whose deciding reason is a CUDA error, or a parity failure
// of a CUDA kernel path (a wrong answer; memcheck tells a bounds error).
bool wants_escalation(const CellResult& r);
bool cuda_parity_failure(const CellResult& r);

// The re-runs for a failed cell, in order (only memcheck for a parity failure).
std::vector<EscalationAttempt> plan_escalation(const CellSpec& cell, const EscalationOptions& options,
                                               bool memcheck_only = false);

// What one re-run showed.
struct AttemptResult {
  EscalationAttempt attempt;
  CellResult result;
  std::string dir_relative;      // attempt dir relative to the run dir (for the report)
  std::string sanitizer_text;    // the memcheck log, "" for other attempts
};

// Folds the re-runs into the original result: an "escalation" table in the
// deciding finding's evidence and in extra, the confirmed kernel as location.
void attach_escalation(CellResult& r, const std::vector<AttemptResult>& attempts);

// Runs an attempt in `dir` and returns its classified result.
using AttemptRunner = std::function<CellResult(const EscalationAttempt& attempt, const std::string& dir)>;

// For every result that wants it: plans, runs (through `run`) and attaches the
// re-runs; rewrites the cell's result.json. `cell_dir(id)` gives the cell's dir.
// Returns the cause when a result.json cannot be rewritten (a harness failure:
// the caller stops the run); the rest are still escalated.
std::optional<std::string> escalate_crashes(std::vector<CellResult>& results, const std::vector<CellSpec>& cells,
                                            const EscalationOptions& options, const std::string& run_dir,
                                            const std::function<std::string(const std::string& id)>& cell_dir,
                                            const AttemptRunner& run, std::ostream* progress);

}  // namespace harness::supervisor
