#pragma once
// Acceptance gates vs what a cell measured (DESIGN §5 "acceptance gates vs
// measured"). Each gate is judged here and only here, from the typed limits a
// cell carries (CellResult::gates, "gates_spec" in results.json) and its typed
// measurements (metrics, step noise, the gates probe's table): unset limits are
// not checked. Skipped cells are never checked: they measured nothing.
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
