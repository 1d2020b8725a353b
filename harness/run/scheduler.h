#pragma once
// The matrix's worker pool: each cell either taken from a stored result
// (resume_plan.h) or run in its own supervised child, `jobs` at a time, with
// its result.json written (atomically, fsynced) as it finishes.
//
// Three things end a cell without a result, and none of them is a verdict:
//  - cancellation (a signal): running cells are stopped, no new ones start;
//  - a harness failure (harness_failure.h): the first one stops the run the same way;
//  - its result cannot be written: also a harness failure.
// Such cells have no result.json, so --resume runs them.
#include <optional>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/run/gpu_pool.h"
#include "harness/run/harness_failure.h"
#include "harness/run/resume_plan.h"
#include "harness/supervisor/runner.h"

namespace harness::run {

struct Schedule {
  std::vector<std::optional<CellResult>> results;  // per cell, in order; nullopt: not run
  std::optional<HarnessFailure> harness_failure;   // the first one, when any
  bool cancelled = false;                          // the cancel predicate fired before the end
};

// `options.cancelled` / `cancel_signal` carry the user's cancellation; the
// scheduler adds its own stop on a harness failure. `options.resume` is not
// read: `plan` decided that. With a GPU pool, each GPU cell waits for a group
// of its own (gpu_pool.h), runs with CUDA_VISIBLE_DEVICES set to it and
// records it in CellResult::gpus; a CPU cell is shown no GPU.
Schedule schedule_cells(const std::vector<CellSpec>& cells, const ResumePlan& plan,
                        const supervisor::ArgvBuilder& argv, const supervisor::RunOptions& options,
                        const GpuPlacement& gpus = {});

// `options` for one cell under `gpus`: CUDA_VISIBLE_DEVICES set to `group`
// (a GPU cell) or to nothing (a CPU cell); unchanged without a pool.
supervisor::RunOptions placed_options(const supervisor::RunOptions& options, const GpuPlacement& gpus,
                                      const std::vector<VisibleGpu>* group);

}  // namespace harness::run
