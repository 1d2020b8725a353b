#pragma once
// Matrix expansion with GitHub Actions semantics, on plain strings (the
// scenario parser validates values and maps them onto settings; this file only
// decides which cells exist and what their ids are).
//
// - axes: cartesian product, first axis outermost, values in written order;
// - exclude: a cell matching every key of one entry is removed;
// - include (after exclude), entry by entry: when every key of the entry that
//   is an original axis equals the cell's value, the entry's other keys are
//   added to that cell (overwriting values earlier includes added, never an
//   original axis value). Only the product's cells are candidates: a cell an
//   include added is never extended by a later include. An entry that matches
//   no cell is added as a new cell.
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

struct MatrixAxis {
  std::string name;
  std::vector<std::string> values;
};

struct MatrixInput {
  std::vector<MatrixAxis> axes;
  std::vector<AxisValues> exclude;
  std::vector<AxisValues> include;
};

struct MatrixCell {
  AxisValues values;          // original axes in axis order, then include keys in the order added
  std::vector<size_t> includes;  // indices of the include entries applied to (or that created) this cell
  std::string id;
};

// A matrix with neither axes nor include entries gives one empty cell ("default").
// Axes whose product is emptied by exclude give no cell at all.
std::vector<MatrixCell> expand_matrix(const MatrixInput& m);

// "k1=v1,k2=v2" in the given order; "default" for no values.
std::string make_cell_id(const AxisValues& values);

// Cells above these counts earn a warning / an error: a matrix grows
// combinatorially, and each cell is a child process that trains a model.
inline constexpr size_t kMatrixWarnCells = 64;
inline constexpr size_t kMatrixMaxCells = 256;

}  // namespace harness
