#pragma once
// Which rank holds the others up, read from the ranks' flight records side by
// side (the analysis PyTorch's flight-recorder tooling does on NCCL dumps):
//   1. the first seq at which the ranks logged different collectives (op, step,
//      bucket) is a mismatch; the rank at fault is the one that never issued a
//      collective the others issued there, though its own steps went past it;
//   2. otherwise, ranks whose last collective never completed wait in it; a
//      rank that never issued that seq is the one they wait for.
#include <optional>
#include <vector>

#include "harness/supervisor/distributed/rank_stream.h"

namespace harness::supervisor::dist {

std::optional<CollectiveStall> find_collective_stall(const std::vector<RankStream>& ranks);

}  // namespace harness::supervisor::dist
