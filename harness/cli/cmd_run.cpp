// `nsa-harness run`: scenario → cells → one supervised child per cell →
// analysis → reports. Prints the decision and where the report is.
//
// Around the run (harness/run/): the run directory is locked for the run's
// life (a second run into it is exit 2); SIGINT/SIGTERM stop it cleanly (a
// report marked cancelled, exit 128+signal); a failure of the harness itself
// (full disk, no permission, no binary) is exit 4 with its cause, never a verdict.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "harness/analysis/analyze.h"
#include "harness/cli/commands.h"
#include "harness/run/platform.h"
#include "harness/run/run_support.h"
#include "harness/report/render_all.h"
#include "harness/supervisor/progress_view.h"
#include "harness/run/cancellation.h"
#include "harness/run/gpu_pool.h"
#include "harness/run/dry_run.h"
#include "harness/run/rerun_failed.h"
#include "harness/run/run_dir.h"
#include "harness/run/shard.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/select.h"
#include "harness/supervisor/watchdog.h"

namespace harness::cli {
using run::load_scenario_to_run;
using run::source_revision;
using run::cuda_available;
using run::now_compact;
using run::now_iso8601;
using run::execute_options;
using run::execute_here;
namespace {

// What the run printed last: the decision, or why there is none.
int finish(const RunResult& run, const std::string& dir, int signal) {
  const RunCompletion& k = run.completion;
  fmt::print(stderr, "\n{}", supervisor::render_summary_table(run));
  if (k.end == RunEnd::harness_failure) {
    fmt::print(stderr, "nsa-harness: harness failure: {}\n", k.harness_failure);
    fmt::print("decision: none (harness failure; {} cell(s) not run)\nreport: {}/report.md\n", k.not_run.size(), dir);
    return kExitHarnessFailure;
  }
  if (k.end == RunEnd::cancelled) {
    fmt::print("decision: none (cancelled by {}; {} of {} cell(s) not run — --resume completes the run)\n"
               "report: {}/report.md\n",
               k.signal.empty() ? "a signal" : k.signal, k.not_run.size(), k.not_run.size() + run.cells.size(), dir);
  } else {
    fmt::print("decision: {}\nreport: {}/report.md\n", to_string(run.decision), dir);
  }
  // Interrupted is interrupted, even when the last cell had just finished: the shell's convention.
  if (signal != 0) return run::exit_code_for_signal(signal);
  return exit_code_for(run.decision);
}

// The cells this invocation runs: --only, then one --shard slice of them.
// Nothing (after printing why) on bad input.
std::optional<std::vector<CellSpec>> cells_to_run(const RunOptions& o, const Scenario& sc, const std::string& path,
                                                  std::optional<ShardInfo>& shard) {
  auto cells = o.only.empty() ? sc.cells : select_cells(sc.cells, o.only);
  if (cells.empty()) {
    fmt::print(stderr, "{}: no cell matches --only '{}'\n", path, o.only);
    return std::nullopt;
  }
  // One slice of the matrix (after --only): merge needs the whole list to tell what is missing.
  if (o.shard.empty()) return cells;
  try {
    const run::ShardSlice slice = run::parse_shard(o.shard);
    shard = run::shard_info(cells, slice, sc.hash, source_revision());
    cells = run::shard_cells(cells, slice);
  } catch (const run::ShardError& e) {
    fmt::print(stderr, "nsa-harness: {}\n", e.what());
    return std::nullopt;
  }
  if (cells.empty())
    fmt::print(stderr, "nsa-harness: shard {} has no cells (the matrix has {}); its results.json says so for merge\n",
               o.shard, shard->matrix_cells.size());
  return cells;
}

}  // namespace

int cmd_run(const RunOptions& o) {
  // --rerun-failed DIR: DIR's scenario (unless given) and its cells that did not pass.
  std::optional<run::RerunPlan> rerun;
  if (!o.rerun_failed.empty()) rerun = run::plan_rerun_failed(run::load_run_dir(o.rerun_failed), o.scenario);
  std::string path = rerun ? rerun->scenario_path : o.scenario.empty() ? default_scenario_path() : o.scenario;
  LoadOptions lo;
  if (!o.device.empty()) lo.device_override = o.device;
  auto loaded = load_scenario_to_run(path, lo);
  if (!loaded) return kExitInvalidInput;
  Scenario& sc = *loaded;
  for (auto& w : sc.warnings) fmt::print(stderr, "{}: warning: {}\n", path, w);
  std::optional<ShardInfo> shard;
  auto selected = cells_to_run(o, sc, path, shard);
  if (!selected) return kExitInvalidInput;
  std::vector<CellSpec>& cells = *selected;
  if (o.dry_run) {
    if (rerun)  // what --rerun-failed would start
      cells.erase(std::remove_if(cells.begin(), cells.end(), [&](const CellSpec& c) { return !rerun->rerun.count(c.id); }),
                  cells.end());
    fmt::print("{}", run::render_listing(run::list_cells(cells)));
    return 0;
  }
  run::GpuDiscovery gpus;
  try {
    gpus = run::gpus_for_cells(cells, cuda_available(), o.gpus_per_cell);
  } catch (const run::GpuListError& e) {
    fmt::print(stderr, "nsa-harness: {}\n", e.what());
    return kExitInvalidInput;
  }
  for (auto& note : gpus.notes) fmt::print(stderr, "nsa-harness: note: {}\n", note);
  std::string dir = !o.out.empty() ? o.out : rerun ? o.rerun_failed : "runs/" + sc.name + "-" + now_compact();
  const run::RunLock lock = run::lock_run_dir(
      dir, now_iso8601(), "not starting a second run into it (wait for it, or choose another --out)");
  if (rerun) {
    run::carry_kept_cells(*rerun, o.rerun_failed, dir);
    fmt::print(stderr, "nsa-harness: re-running {} cell(s) of {} that did not pass; keeping {} passed\n",
               rerun->rerun.size(), o.rerun_failed, rerun->kept.size());
  }
  fmt::print(stderr, "nsa-harness: {} — {} cell(s){} → {}\n", sc.name, cells.size(),
             shard ? fmt::format(" (shard {})", o.shard) : "", dir);
  if (!gpus.gpus.empty())
    fmt::print(stderr, "nsa-harness: GPUs ({}): {}; {} per GPU cell{}\n", gpus.source, run::describe_gpus(gpus.gpus),
               o.gpus_per_cell,
               o.cells_per_gpu > 1 ? fmt::format(", up to {} cells per GPU at a time", o.cells_per_gpu) : "");

  // Installed for the reports too: a signal while they are written lets them finish.
  run::SignalCancellation cancel(&std::cerr, supervisor::SupervisorOptions{}.kill_grace_s);
  run::ExecuteOptions eo = execute_options(dir, o.jobs, o.self_exe, path);
  eo.resume = o.resume || rerun.has_value();
  if (rerun) eo.rerun = rerun->rerun;
  eo.gpus = gpus.gpus;
  eo.gpus_per_cell = o.gpus_per_cell;
  eo.cells_per_gpu = o.cells_per_gpu;
  eo.escalate = o.escalate;
  eo.cancelled = cancel.predicate();
  eo.cancel_signal = cancel.signal_source();
  RunResult run = execute_here(sc, cells, eo);
  run.command_line = o.command_line;
  run.shard = shard;
  analyze(run);
  try {
    render_all(run, dir);
  } catch (const std::exception& e) {
    // The run's own cause first (a full disk usually fails the report too).
    const bool earlier = run.completion.end == RunEnd::harness_failure;
    fmt::print(stderr, "nsa-harness: harness failure: {}\n", earlier ? run.completion.harness_failure : e.what());
    if (earlier) fmt::print(stderr, "nsa-harness: the report could not be written either: {}\n", e.what());
    return kExitHarnessFailure;
  }
  return finish(run, dir, cancel.signal());
}

}  // namespace harness::cli
