#pragma once
// NSA against dense attention, measured in one run. A matrix with the
// `attention` axis (nsa / dense) has pairs of cells that differ only in the
// attention layer; per pair, NSA's median tok/s over the dense cell's, with the
// step-to-step noise of both, so "NSA is at 0.17× of dense" is one number
// taken on one machine at one time, never two runs' figures side by side.
//
// A dense cell is also the baseline of NSA cells that differ from it in flags
// only the NSA layer reads (FlagReach::nsa_layer_only, nsa/flags.h): the dense
// cell runs the same program whatever their value, so a scenario that varies
// such a flag (window_bwd.yaml's NSA_WINDOW_BWD) keeps one dense cell for all
// its NSA cells and each gets its ratio.
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

struct DenseComparison {
  std::string nsa_cell;
  std::string dense_cell;
  // The axes on which the two cells differ besides `attention`: NSA-layer-only
  // flags, none when the dense cell matches exactly.
  std::vector<std::string> layer_only_axes;
  double nsa_tok_s = 0;
  double dense_tok_s = 0;
  double ratio = 0;  // nsa_tok_s / dense_tok_s: > 1 means NSA is faster
  // Relative noise of the ratio: the two cells' robust step-time spreads over
  // their medians, added in quadrature (0 when either has too few steps).
  double noise = 0;
  // Run-to-run noise of the ratio: each cell's run_to_run_spread (its
  // `repeat` cells), in quadrature; 0 when the matrix has no repeats.
  double run_noise = 0;
};

// One entry per attention=nsa cell that passed with a measured tok/s and has a
// baseline: a passing, measured attention=dense cell whose other axes are equal
// or differ only in NSA-layer-only flags; the exact match where there is one,
// else the first such cell in cell order. In the NSA cells' order.
std::vector<DenseComparison> dense_comparisons(const std::vector<CellResult>& cells);

// As results.json carries it (`dense_comparisons`: output only, for readers of
// the file alone; the report recomputes the pairing from the cells).
void to_json(nlohmann::json& j, const DenseComparison& d);

}  // namespace harness
