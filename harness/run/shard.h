#pragma once
// One matrix over many machines: `run --shard I/N` runs the I-th of N slices,
// `merge` joins the slices' run directories again (merge.h).
//
// The slices are round-robin over the cell ids sorted bytewise: stable under
// anything but the set of ids itself (a reordered matrix axis, another
// machine, another locale), near-equal in size, and each cell in exactly one.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/placement.h"

namespace harness::run {

// A bad --shard (bad input: exit 2).
class ShardError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ShardSlice {
  int index = 0;
  int count = 1;
};

// "I/N" with 0 ≤ I < N (N ≥ 1). Throws ShardError saying what is wrong.
ShardSlice parse_shard(std::string_view text);

// The cells of slice `s`, in the order of `cells`.
std::vector<CellSpec> shard_cells(const std::vector<CellSpec>& cells, ShardSlice s);

// What results.json records for slice `s` of `cells` (the whole matrix).
ShardInfo shard_info(const std::vector<CellSpec>& cells, ShardSlice s, const std::string& scenario_hash,
                     const std::string& revision);

}  // namespace harness::run
