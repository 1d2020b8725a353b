#pragma once
// A finding that rests on time alone may be the machine's (another process
// took the cores), not the model's: such a cell is re-run once, in the same
// conditions, and the finding stands only if the re-run fails on time too
// (Megatron's re-run idea). Otherwise the re-run's result is the cell's, with
// the first run's finding kept as an info note.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/supervisor/crash_escalation.h"

namespace harness::run {

using RunAttempt = std::function<CellResult(const supervisor::EscalationAttempt&, const std::string& dir)>;
using CellDir = std::function<std::string(const std::string& id)>;

// `results[i]` belongs to `cells[i]`; nullopt entries (not run) are left
// alone, and so are results confirmed before (a resumed run). A re-run cut
// short by `cancelled` makes the cell not run again (its result.json is
// removed, so --resume confirms it afresh). Returns the cause when a result
// cannot be written back (a harness failure).
std::optional<std::string> confirm_timing_findings(std::vector<std::optional<CellResult>>& results,
                                                   const std::vector<CellSpec>& cells, const std::string& run_dir,
                                                   const CellDir& cell_dir, const RunAttempt& run_attempt,
                                                   const std::function<bool()>& cancelled);

}  // namespace harness::run
