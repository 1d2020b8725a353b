#pragma once
// `run --dry-run`: the cells a run would start, each with every setting that
// differs between them, without running anything. The settings come from the
// cells' effective specs (what a child would be given), not from the matrix
// text, so an include entry, an environment flag or --device shows as it lands.
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"

namespace harness::run {

struct CellListing {
  std::vector<std::string> columns;             // "id", "device", then the differing settings (dotted paths)
  std::vector<std::vector<std::string>> rows;   // one per cell, in run order
};

// Settings that are equal in every cell are left out (they say nothing about
// which cell is which); `device` is always shown: it decides where a cell runs.
CellListing list_cells(const std::vector<CellSpec>& cells);

// A plain aligned table, one line per cell, with a header and a count.
std::string render_listing(const CellListing& listing);

}  // namespace harness::run
