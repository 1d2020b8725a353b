#pragma once
// Turns expanded matrix cells into CellSpecs: the base settings, then each
// axis value, then the include entry's `expect`; then the checks only a whole
// cell can fail (docs/scenario-format.md, "Impossible combinations").
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/matrix_parse.h"

namespace harness {

struct BuildOptions {
  std::optional<std::string> device_override;  // `--device`: wins over the file's device
  std::string scenario_file;
};

std::vector<CellSpec> build_cells(const CellDraft& base, const ParsedMatrix& pm, const std::vector<MatrixCell>& cells,
                                  const BuildOptions& opts, Checker& check, ModelLibrary& models);

}  // namespace harness
