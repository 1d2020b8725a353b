#pragma once
// A failure the machine could have caused is re-run once before it stands
// (Megatron's re-run idea):
//  - a finding that rests on time alone may be the machine's (another process
//    took the cores): the cell is re-run in the same conditions, and the
//    finding stands only if the re-run fails on time too; otherwise the
//    re-run's result is the cell's, the first run's finding kept as an info note;
//  - any failure of a cell that shared its GPU with other cells (run
//    --cells-per-gpu) may be theirs — memory they held, time they took: the
//    cell is re-run with the GPU to itself, and that run's result is the
//    cell's, whatever it is, the first run's failure kept as an info note.
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

// Why a finished cell is re-run before its verdict stands.
enum class Recheck { none, timing, shared_gpu };
Recheck recheck_for(const CellResult& r);

// The cell's result once `again` (the re-run, kept in `rerun_dir`, relative
// to the run directory) has run for `why`.
CellResult settle_recheck(CellResult first, CellResult again, Recheck why, const std::string& rerun_dir);

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
