#pragma once
// Acceptance gates vs what a cell measured (DESIGN §5 "acceptance gates vs
// measured"). The gate values travel in a cell's extra["gates_spec"], the JSON
// form of GateSpec (cell_spec.h): {min_tok_s, max_step_ms, require_finite,
// require_loss_falls, min_branch_share, max_branch_share}; absent keys (or an
// absent gates_spec) are not checked. Skipped cells are never checked: they
// measured nothing.
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/results.h"

namespace harness {

std::vector<GateCheck> check_gates(const CellResult& cell);
std::vector<GateCheck> check_gates(const std::vector<CellResult>& cells);

// The reason code an unmet gate stands for ("min_tok_s" → "gate_min_tok_s",
// "require_finite" → "non_finite"), so an unmet gate reads like any other failure.
std::string_view gate_reason(std::string_view gate);

}  // namespace harness
