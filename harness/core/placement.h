#pragma once
// Where a run's work was placed: the GPU(s) a cell was handed, and the slice
// of the matrix a sharded run covered (or the slices a merged run joined).
// Plain records for results.json; harness/run/ decides them.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace harness {

// One GPU as the supervisor handed it to a cell: the index and name the driver
// lists (nvidia-smi), and the UUID that names the board on any machine and
// in any CUDA_VISIBLE_DEVICES order.
struct GpuDevice {
  int index = -1;  // -1: not in the driver's list (e.g. a MIG instance the parent passed through)
  std::string uuid;
  std::string name;
};

// One slice of a matrix, run on its own (`run --shard I/N`). Merge joins
// slices only when they cut the same matrix of the same scenario with the same
// harness; these are the facts it compares.
struct ShardInfo {
  int index = 0;
  int count = 1;
  std::vector<std::string> matrix_cells;  // every cell id of the whole matrix, in scenario order
  std::string scenario_hash;
  std::string revision;  // the harness's source revision (git, "-dirty" when modified)
};

// One shard a merged run took cells from.
struct MergeSource {
  int shard_index = 0;
  std::string dir;  // the shard's run directory, as given to merge
  int cells = 0;    // cells taken from it
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuDevice, index, uuid, name)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MergeSource, shard_index, dir, cells)
// Written by hand: a shard without its index and count is refused, not defaulted.
void to_json(nlohmann::json& j, const ShardInfo& s);
void from_json(const nlohmann::json& j, ShardInfo& s);

}  // namespace harness
