#include "harness/supervisor/runner.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "harness/core/cell_dir.h"
#include "harness/protocol/events.h"
#include "harness/supervisor/classify.h"
#include "harness/supervisor/rank_group.h"
#include "harness/supervisor/run_progress.h"
#include "harness/supervisor/stack_capture.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Slack on top of a cell's own deadlines before the wall cap fires: process
// start-up, stack collection, the final done/exit.
constexpr double kWallSlackS = 60.0;
// Files a previous attempt may have left; removed before a cell runs again so
// that appended events from two attempts never mix.
constexpr const char* kStaleFiles[] = {protocol::kEventsFile, protocol::kStacksFile, "gdb_stacks.txt", kSymbolizedStacksFile,
                                       protocol::kTraceFile, protocol::kResultFile};

CellResult cancelled_result(const CellSpec& cell) {
  SupervisedRun run;
  run.killed_by = KillReason::cancelled;
  return classify(cell, run);
}

}  // namespace

SupervisedRun supervise_cell(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& opt,
                             const std::string& dir, int slot) {
  if (cell.train.world_size > 1) return supervise_rank_group(cell, argv, opt, dir, slot);
  return supervise_process(cell, argv, opt, dir, slot);
}

SupervisedRun supervise_process(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& opt,
                                const std::string& dir, int slot) {
  SupervisedRun run;
  run.cell_dir = dir;
  run.artifacts_relative_to = opt.run_dir;
  try {
    fs::create_directories(dir);
    for (const char* name : kStaleFiles) fs::remove(fs::path(dir) / name);
    write_file_atomic(dir + "/" + protocol::kCellSpecFile, json(cell).dump(2) + "\n");
    ChildLaunch launch;
    launch.argv = argv(cell, dir);
    launch.env = opt.env;
    if (!opt.device_slots.empty())
      launch.env["CUDA_VISIBLE_DEVICES"] = opt.device_slots[static_cast<size_t>(slot) % opt.device_slots.size()];
    launch.output_path = dir + "/" + protocol::kStderrFile;
    launch.cell_dir = dir;
    SupervisorOptions sup = opt.supervisor;
    if (sup.max_wall_s <= 0) sup.max_wall_s = derived_max_wall_s(cell);
    sup.busy_is_progress = sup.busy_is_progress || cell.device == "cpu";
    Hooks hooks;
    hooks.cancelled = opt.cancelled;
    hooks.cancel_signal = opt.cancel_signal;
    if (opt.on_cell_event) hooks.on_event = [&](const json& e) { opt.on_cell_event(cell.id, e); };
    run = supervise(launch, cell.watchdog, hooks, sup);
    run.artifacts_relative_to = opt.run_dir;
  } catch (const std::exception& e) {
    run.launch_error = fmt::format("preparing cell '{}' in {}: {}", cell.id, dir, e.what());
  }
  return run;
}

CellResult run_cell_in_dir(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& opt,
                           const std::string& dir, int slot) {
  return classify(cell, supervise_cell(cell, argv, opt, dir, slot));
}

std::string cell_dir_name(const std::string& id) { return harness::cell_dir_name(id); }

bool live_progress(const RunOptions& opt) {
  const bool tty = opt.progress_is_tty.value_or(opt.progress == &std::cerr && isatty(fileno(stderr)));
  return wants_live_view(tty, std::getenv("CI"), std::getenv("NO_COLOR"));
}

std::function<void(const std::string&, const json&)> step_reporter(
    RunProgress& progress, std::function<void(const std::string&, const json&)> also) {
  return [&progress, also](const std::string& id, const json& e) {
    if (e.value("ev", "") == protocol::ev::step_end) progress.step(id, e.value("step", 0));
    if (also) also(id, e);
  };
}

double derived_max_wall_s(const CellSpec& cell) {
  const auto& w = cell.watchdog;
  return w.first_step_timeout_s + std::max(1, cell.train.steps) * w.step_timeout_s + w.stall_timeout_s + kWallSlackS;
}

std::optional<CellResult> load_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return json::parse(in).get<CellResult>();
  } catch (const std::exception&) {
    return std::nullopt;  // half-written or foreign: the cell runs again
  }
}

std::vector<CellResult> run_cells(const std::vector<CellSpec>& cells, const ArgvBuilder& argv,
                                  const RunOptions& opt) {
  std::vector<CellResult> results(cells.size());
  std::vector<bool> todo(cells.size(), true);
  RunProgress progress(opt.progress, live_progress(opt), static_cast<int>(cells.size()), opt.jobs);
  RunOptions watched = opt;
  watched.on_cell_event = step_reporter(progress, opt.on_cell_event);

  if (opt.resume) {
    for (size_t i = 0; i < cells.size(); ++i) {
      auto path = fs::path(opt.run_dir) / "cells" / cell_dir_name(cells[i].id) / protocol::kResultFile;
      auto r = load_result(path.string());
      if (!r || r->id != cells[i].id) continue;
      results[i] = std::move(*r);
      todo[i] = false;
      progress.resumed(results[i]);
    }
  }

  std::atomic<size_t> next{0};
  std::mutex result_mu;
  auto worker = [&](int slot) {
    // PR_SET_PDEATHSIG is tied to this thread: each child is spawned, watched
    // and reaped here, and the thread outlives every child it started.
    while (true) {
      size_t i = next++;
      if (i >= cells.size()) return;
      if (!todo[i]) continue;
      const CellSpec& cell = cells[i];
      CellResult r;
      if (opt.cancelled && opt.cancelled()) {
        r = cancelled_result(cell);
      } else {
        progress.started(cell.id, cell.train.steps);
        r = run_cell_in_dir(cell, argv, watched, (fs::path(opt.run_dir) / "cells" / cell_dir_name(cell.id)).string(),
                            slot);
        // A cancelled cell has no result file: --resume runs it again.
        if (r.reason != kReasonCancelled) {
          try {
            auto dir = fs::path(opt.run_dir) / "cells" / cell_dir_name(cell.id);
            write_file_atomic((dir / protocol::kResultFile).string(), json(r).dump(2) + "\n");
          } catch (const std::exception& e) {
            r.extra["result_write_error"] = e.what();
          }
        }
        progress.finished(r);
      }
      std::lock_guard<std::mutex> lock(result_mu);
      if (opt.on_result) opt.on_result(r);
      results[i] = std::move(r);
    }
  };
  const int jobs = std::max(1, std::min<int>(opt.jobs, static_cast<int>(cells.size())));
  std::vector<std::thread> threads;
  for (int s = 0; s < jobs; ++s) threads.emplace_back(worker, s);
  for (auto& t : threads) t.join();
  progress.done();
  return results;
}

}  // namespace harness::supervisor
