#pragma once
// The tables report.md and appendix.md share: each renders one concept from
// the RunResult, so the top page and the appendix never word a fact twice.
#include <string>

#include "harness/core/results.h"
#include "harness/report/report_links.h"

namespace harness {

// A matrix up to this many cells is shown whole on the top page (matrix,
// settings, ranks); a larger one shows its failing cells there and the rest
// in the appendix, so report.md stays one page.
inline constexpr size_t kInlineCellsOnTop = 12;

// Cells × outcome, reason, steps, last loss, tok/s, step ms (+ GPU, Expected
// columns when any cell has them). `failing_only` keeps the cells that did not
// pass (the top page of a large matrix); cell ids link to their pages.
std::string matrix_table(const RunResult& r, bool failing_only);
// Flags and faults per cell and the machine's load; "" when nothing to say.
// `top` (report.md): only the cells whose settings their ids do not already
// say — a fault, a flag from the environment, a flag the id does not name as
// `K=V` — and one line for the rest; the appendix lists every cell.
std::string settings_section(const RunResult& r, bool top = false);
std::string gates_section(const RunResult& r);
// Only for matrices with an attention (nsa/dense) or probes axis; "" otherwise.
std::string dense_section(const RunResult& r);
std::string observation_section(const RunResult& r);
// The observed cells' step-end hooks (what the probes cost outside the timed
// step, as the child measured it), for the appendix; "" when none.
std::string probe_hooks_section(const RunResult& r);
// Only for matrices with `repeat: N`: whether each setting's runs computed the
// same losses bit for bit (repeat_agreement.h). `summary` is the top page's
// paragraph (counts, the earliest parting, a link to the appendix's table); else the table.
std::string reproducibility_section(const RunResult& r, bool summary);
// The repro command of every failing cell, or (`root_cause_only`) of the root cause's first cell.
std::string repro_section(const RunResult& r, bool root_cause_only);
std::string charts_section(const RunResult& r);
// Run files and each cell's files; a file that is not on disk is named, not linked.
std::string artifacts_section(const RunResult& r, const FileExists& exists);
// Numbered; `max_shown` = 0 shows all.
std::string actions_section(const RunResult& r, size_t max_shown);

}  // namespace harness
