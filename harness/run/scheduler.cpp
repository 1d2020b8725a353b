#include "harness/run/scheduler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "harness/core/atomic_file.h"
#include "harness/protocol/events.h"
#include "harness/run/spec_hash.h"
#include "harness/supervisor/classify.h"
#include "harness/supervisor/run_progress.h"

namespace harness::run {
namespace fs = std::filesystem;

supervisor::RunOptions placed_options(const supervisor::RunOptions& options, const GpuPlacement& gpus,
                                      const std::vector<VisibleGpu>* group) {
  supervisor::RunOptions o = options;
  // A CPU cell holds no GPU, so it must not touch one another cell holds.
  if (gpus.pool) o.env["CUDA_VISIBLE_DEVICES"] = group ? cuda_visible_devices(*group) : "";
  // GPU cells side by side share the cores: each child's intra-op pool (all
  // cores by default) gets its share unless the caller chose; the child records
  // the threads it ran with. CPU cells take one thread already (cell_runner.cpp).
  if (group && o.jobs > 1 && !std::getenv("OMP_NUM_THREADS") && !o.env.count("OMP_NUM_THREADS"))
    o.env["OMP_NUM_THREADS"] = std::to_string(std::max(1u, std::thread::hardware_concurrency() / unsigned(o.jobs)));
  return o;
}

Schedule schedule_cells(const std::vector<CellSpec>& cells, const ResumePlan& plan,
                        const supervisor::ArgvBuilder& argv, const supervisor::RunOptions& options,
                        const GpuPlacement& gpus) {
  Schedule out;
  out.results.resize(cells.size());
  supervisor::RunProgress progress(options.progress, supervisor::live_progress(options), static_cast<int>(cells.size()),
                                   options.jobs);

  std::mutex mu;  // guards out.harness_failure
  std::atomic<bool> harness_failed{false};
  auto user_cancelled = [&] { return options.cancelled && options.cancelled(); };
  supervisor::RunOptions ro = options;
  ro.on_cell_event = supervisor::step_reporter(progress, options.on_cell_event);
  // One predicate for both reasons to stop: the watchdog kills a running
  // child on either, and its cell is then reported as not run.
  ro.cancelled = [&] { return harness_failed.load() || user_cancelled(); };
  auto fail = [&](const std::string& cell, const std::string& cause) {
    std::lock_guard<std::mutex> lock(mu);
    if (!out.harness_failure) out.harness_failure = HarnessFailure{cell, cause};
    harness_failed = true;
  };

  for (size_t i = 0; i < cells.size() && i < plan.decisions.size(); ++i)
    if (plan.decisions[i].action == ResumeAction::reuse) {
      out.results[i] = plan.decisions[i].reused;
      progress.resumed(*out.results[i]);
    }

  std::atomic<size_t> next{0};
  auto worker = [&](int slot) {
    // PR_SET_PDEATHSIG is tied to this thread: each child is spawned, watched
    // and reaped here, and the thread outlives every child it started.
    while (true) {
      const size_t i = next++;
      if (i >= cells.size()) return;
      if (out.results[i] || ro.cancelled()) continue;
      const CellSpec& cell = cells[i];
      const std::string dir = (fs::path(options.run_dir) / "cells" / supervisor::cell_dir_name(cell.id)).string();
      std::optional<GpuLease> lease;  // held until the child's group is reaped
      if (gpus.pool && gpus.needs_gpu && gpus.needs_gpu(cell)) {
        // A world_size cell: a GPU per rank where the pool has enough (gpu_pool.h).
        auto group = gpus.pool->acquire(gpus.pool->count_for(cell.train.world_size), ro.cancelled,
                                        gpus.wait_deadline_s);
        if (!group && ro.cancelled()) continue;  // stopped while waiting: not started, not run
        if (!group) {
          fail(cell.id, fmt::format("no GPU group came free for cell '{}' within {:.0f} s, longer than every "
                                    "running cell's own wall-time cap", cell.id, gpus.wait_deadline_s));
          continue;
        }
        lease.emplace(*gpus.pool, *group);
      }
      const std::vector<VisibleGpu> held = lease ? gpus.pool->gpus_of(lease->block()) : std::vector<VisibleGpu>{};
      const std::vector<VisibleGpu>* group = lease ? &held : nullptr;
      progress.started(cell.id, cell.train.steps);
      supervisor::SupervisedRun sr = supervisor::supervise_cell(cell, argv, placed_options(ro, gpus, group), dir, slot);
      if (lease) sr.gpu_sharers = lease->release();
      if (sr.killed_by == supervisor::KillReason::cancelled) {
        progress.stopped(cell.id, harness_failed ? "the run stopped on a harness failure" : "cancelled");
        continue;
      }
      CellResult r = supervisor::classify(cell, sr);
      r.spec_hash = cell_spec_hash(cell);
      if (group) r.gpus = devices_of(*group);
      if (auto cause = harness_cause(sr, r)) {
        fail(cell.id, *cause);
        progress.stopped(cell.id, "harness failure");
        continue;
      }
      try {
        write_file_atomic((fs::path(dir) / protocol::kResultFile).string(), nlohmann::json(r).dump(2) + "\n");
      } catch (const std::exception& e) {
        // A result that cannot be kept is not kept: --resume must run the cell again.
        fail(cell.id, e.what());
        progress.stopped(cell.id, "harness failure");
        continue;
      }
      progress.finished(r);
      out.results[i] = std::move(r);  // each index is written by one worker only
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(cells.size())));
  std::vector<std::thread> threads;
  for (int s = 0; s < jobs; ++s) threads.emplace_back(worker, s);
  for (auto& t : threads) t.join();
  progress.done();
  out.cancelled = user_cancelled();
  return out;
}

}  // namespace harness::run
