#pragma once
// The matrix runner: every cell in its own child process, `jobs` at a time,
// each cell's directory under <run dir>/cells/<cell_dir_name(id)>/ holding
// cell.json (written before launch), the child's artifacts and result.json
// (written atomically when the cell finishes, so a killed run never leaves a
// half-written result that --resume would trust). A cell that cannot even be
// launched becomes a crash result; nothing a cell does aborts the run.
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/core/atomic_file.h"
#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/supervisor/watchdog.h"

namespace harness::supervisor {

// The child's command line for one cell; the CLI returns
// {exe, "cell", "--spec", <cell dir>/cell.json, "--out", <cell dir>}.
using ArgvBuilder = std::function<std::vector<std::string>(const CellSpec& cell, const std::string& cell_dir)>;

struct RunOptions {
  std::string run_dir;
  int jobs = 1;
  // One entry per device; job slot i gets CUDA_VISIBLE_DEVICES=device_slots[i % n].
  // Empty: the variable is left as it is.
  std::vector<std::string> device_slots;
  bool resume = false;
  std::map<std::string, std::string> env;  // extra environment for every child
  // max_wall_s 0 here means "derive per cell": first-step deadline + steps × step deadline + slack.
  SupervisorOptions supervisor;
  std::ostream* progress = nullptr;        // nullptr: no progress output
  std::optional<bool> progress_is_tty;     // unset: isatty(stderr) when progress is std::cerr (live view
                                           // unless CI or NO_COLOR is set: progress_view.h)
  std::function<bool()> cancelled;         // polled; true stops launching and kills running cells
  std::function<int()> cancel_signal;      // the signal a cancelled child's group gets first; unset: SIGTERM
  std::function<void(const CellResult&)> on_result;  // called (serialised) as each cell finishes
  // Each event a single-process cell's child writes, as the watchdog reads it (the live progress view's steps).
  std::function<void(const std::string& cell_id, const nlohmann::json& event)> on_cell_event;
};

// Results in the order of `cells` (resumed cells included, read back from disk).
std::vector<CellResult> run_cells(const std::vector<CellSpec>& cells, const ArgvBuilder& argv,
                                  const RunOptions& options);

// One cell, start to finish, in exactly `dir` (run_cells uses
// <run dir>/cells/<cell_dir_name(id)>; crash escalation a sub-directory of
// that). Never throws: every failure becomes a result. Does not write result.json.
CellResult run_cell_in_dir(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& options,
                           const std::string& dir, int slot = 0);

// run_cell_in_dir without the classification: the run as the watchdog saw it.
// A failure to prepare the directory (cell.json) or to start the child is in
// `launch_error`, which callers can tell apart from anything the child did.
// A world_size > 1 cell runs one child per rank (rank_group.h), in dir/rank<r>/.
SupervisedRun supervise_cell(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& options,
                             const std::string& dir, int slot = 0);

// One child process for `cell` in `dir`, whatever its world_size (a rank of a
// group is one such process, its RANK etc. in options.env).
SupervisedRun supervise_process(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& options,
                                const std::string& dir, int slot = 0);

// The cell's directory name (harness/core/cell_dir.h), here for the supervisor's callers.
std::string cell_dir_name(const std::string& id);

// The wall-time cap for one cell: its own deadlines summed, plus slack.
double derived_max_wall_s(const CellSpec& cell);

// The result stored in `path`, or nullopt when missing or unreadable.
std::optional<CellResult> load_result(const std::string& path);

}  // namespace harness::supervisor

namespace harness::supervisor {
// Live progress view or plain lines, from the options and the environment.
bool live_progress(const RunOptions& opt);
}  // namespace harness::supervisor
