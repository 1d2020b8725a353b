#pragma once
// A standalone scenario that reproduces one cell: no `extends`, no matrix,
// every setting written out (model included), so it keeps meaning the same
// thing after the original scenario or the named configs change.
// `nsa-harness repro` writes it; load_scenario of the text gives a cell
// equal to the original in every field apart from its id, axes and file, and
// from_environment (those settings are written out as the file's own).
#include <string>

#include "harness/core/cell_spec.h"

namespace harness {

// `comment` (any number of lines) goes at the top as '#' lines.
std::string cell_to_scenario_yaml(const CellSpec& cell, const std::string& comment);

}  // namespace harness
