#pragma once
// `--only GLOB`: picks cells by id with fnmatch(3) patterns. Several patterns
// separated by ';' or '|' are OR'ed: "prefill=batched,*|*precision=fp16*".
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"

namespace harness {

// Cells whose id matches any pattern, in their original order. An empty
// pattern list selects every cell.
std::vector<CellSpec> select_cells(const std::vector<CellSpec>& cells, const std::string& glob);

// The patterns of a glob string, empty ones dropped.
std::vector<std::string> split_globs(const std::string& glob);

}  // namespace harness
