#pragma once
// A world_size > 1 cell: one child process per rank under this supervisor,
// each in <cell dir>/rank<r>/ with its own events, stderr and stacks, all
// watched at once with the cell's deadlines. The ranks meet on a port the
// supervisor leases (rank_port.h) and learn their place from torchrun's
// variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
//
// No rank is left behind: when one rank ends with a failure (a deadline, a
// signal, a non-zero exit) every other rank's process group is killed at
// once — a rank waiting for a dead peer would otherwise wait out its own
// timeout — and each of those is marked stopped_with_group.
#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/supervisor/runner.h"
#include "harness/supervisor/watchdog.h"

namespace harness::supervisor {

inline constexpr const char* kRankDirPrefix = "rank";

SupervisedRun supervise_rank_group(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& options,
                                   const std::string& dir, int slot);

// The cell's result from its ranks: each rank classified alone, the deciding
// rank's outcome and findings, rank 0's steps and metrics (its losses are the
// global batch's), and the distributed diagnosis from the ranks' event files
// (supervisor/distributed/): which rank is stuck, diverging or straggling. A
// blocking distributed finding turns a pass into a fail and names a hang.
CellResult classify_ranks(const CellSpec& spec, const SupervisedRun& group);

}  // namespace harness::supervisor
