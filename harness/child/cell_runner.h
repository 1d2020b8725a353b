#pragma once
// `nsa-harness cell`: runs one cell in this process — builds the model, trains
// the planned steps with the probes attached, and streams events. Never throws:
// every failure becomes an `error` event and a non-zero exit status.
#include <string>

#include "harness/core/cell_spec.h"

namespace harness::child {

// Returns the process exit status: 0 when all steps ran, 1 on a caught error.
int run_cell(const CellSpec& spec, const std::string& out_dir);

}  // namespace harness::child
