#pragma once
// The identity of what a cell runs. --resume may reuse a stored result only
// when the cell it would stand for is the same cell: same model, training,
// flags, faults, environment settings, probes, deadlines, gates, device and
// expectation. A result from before a change to any of them is stale.
#include <string>

#include "harness/core/cell_spec.h"

namespace harness::run {

// FNV-1a (64 bit, hex) of the cell's spec as serialized to cell.json, minus
// `scenario_file`: the same scenario reached by another path is the same cell
// (the scenario's own hash makes the same choice).
std::string cell_spec_hash(const CellSpec& cell);

}  // namespace harness::run
