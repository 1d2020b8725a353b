#pragma once
// NSA against dense attention, measured in one run. A matrix with the
// `attention` axis (nsa / dense) has pairs of cells that differ only in the
// attention layer; per pair, NSA's median tok/s over the dense cell's, with the
// step-to-step noise of both, so "NSA is at 0.17× of dense" is one number
// taken on one machine at one time, never two runs' figures side by side.
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

struct DenseComparison {
  std::string nsa_cell;
  std::string dense_cell;
  double nsa_tok_s = 0;
  double dense_tok_s = 0;
  double ratio = 0;  // nsa_tok_s / dense_tok_s: > 1 means NSA is faster
  // Relative noise of the ratio: the two cells' robust step-time spreads over
  // their medians, added in quadrature (0 when either has too few steps).
  double noise = 0;
};

// One entry per (attention=nsa, attention=dense) pair whose other axes are
// equal and which both passed with a measured tok/s; in cell order.
std::vector<DenseComparison> dense_comparisons(const std::vector<CellResult>& cells);

}  // namespace harness
