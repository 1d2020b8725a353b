#pragma once
// One run of a list of cells, start to finish: plan (which cells can run
// here, which stored results --resume takes), schedule and supervise the
// children, escalate CUDA crashes, confirm timing findings, and collect it all
// into a RunResult in the scenario's cell order. How the run ended (complete,
// cancelled, harness failure) is in RunResult::completion; cells that did not
// finish are listed there and appear nowhere else.
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/run/gpu_inventory.h"
#include "harness/scenario/scenario.h"

namespace harness::run {

struct ExecuteOptions {
  std::string run_dir;
  int jobs = 1;
  bool resume = false;
  std::set<std::string> rerun;  // with resume: cells run again whatever they stored (run --rerun-failed)
  bool escalate = true;    // re-run CUDA crashes where they can say more (crash_escalation.h)
  bool have_cuda = false;  // cells that need CUDA become skips without a process when false
  // The GPUs cells may be given (gpu_inventory.h), `gpus_per_cell` to a GPU
  // cell (gpu_pool.h). Empty: GPUs are not managed; children inherit
  // CUDA_VISIBLE_DEVICES as it is.
  std::vector<VisibleGpu> gpus;
  int gpus_per_cell = 1;
  int cells_per_gpu = 1;   // cells that may hold one GPU at the same time (gpu_pool.h)
  std::string self_exe;    // children are `self_exe cell --spec … --out …`
  std::string scenario_path;
  std::map<std::string, std::string> env;  // extra environment for every child
  std::function<bool()> cancelled;         // e.g. SignalCancellation::predicate()
  std::function<int()> cancel_signal;      // the signal to forward to running children
  std::ostream* log = nullptr;             // progress and resume notes
};

RunResult execute_cells(const Scenario& sc, const std::vector<CellSpec>& cells, const ExecuteOptions& options);

// "nsa-harness run 'SCENARIO' --only 'ID'": every argument shell-quoted, so the
// line pasted into a shell runs exactly this and nothing else.
std::string repro_command(const std::string& scenario_path, const std::string& cell_id);

}  // namespace harness::run
