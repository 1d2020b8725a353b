#pragma once
// Reads a scenario's `matrix:` mapping into MatrixInput (plain strings for
// expand_matrix) while checking every axis name and value once, and keeps what
// cells need afterwards: each value's setting and where it was written.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/axes.h"
#include "harness/scenario/matrix.h"

namespace harness {

struct ParsedValue {
  AxisValue value;
  Origin origin;
};

struct ParsedInclude {
  std::vector<std::pair<std::string, ParsedValue>> values;  // axis keys, as written
  std::optional<nlohmann::json> expect;
  Pos pos;
};

struct ParsedMatrix {
  bool present = false;  // a non-empty `matrix:` was written
  Pos pos;               // the `matrix` key
  MatrixInput input;
  std::vector<std::vector<ParsedValue>> axis_values;  // parallel to input.axes
  std::vector<ParsedInclude> includes;                // parallel to input.include

  // The setting and origin behind `axis=text` in `cell` (from its axis list, or
  // from the last include entry applied to the cell that set it).
  const ParsedValue& lookup(const MatrixCell& cell, const std::string& axis, const std::string& text) const;
};

ParsedMatrix parse_matrix(const YEntry* matrix, Checker& check, ModelLibrary& models);

// Expands, then checks what only the expansion shows: duplicate cells, an empty
// matrix, and the cell-count limits (over kMatrixWarnCells adds a warning).
std::vector<MatrixCell> expand_checked(const ParsedMatrix& pm, Checker& check, std::vector<std::string>& warnings);

}  // namespace harness
