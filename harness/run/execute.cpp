#include "harness/run/execute.h"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "harness/core/text.h"
#include "harness/run/cancellation.h"
#include "harness/run/confirm_timing.h"
#include "harness/run/flight_notes.h"
#include "harness/run/gpu_pool.h"
#include "harness/run/resume_plan.h"
#include "harness/run/scheduler.h"
#include "harness/supervisor/crash_escalation.h"
#include "harness/supervisor/runner.h"

namespace harness::run {
namespace {

// A cell that cannot run here: its expectation is not judged (neither met nor
// missed) unless it expected exactly that skip.
CellResult skipped(const CellSpec& c, std::string_view code, const std::string& why) {
  CellResult r;
  r.id = c.id;
  r.axes = c.axes;
  r.outcome = Outcome::skip;
  r.reason = std::string(code);
  r.steps_planned = c.train.steps;
  Finding f;
  f.code = std::string(code);
  f.severity = Severity::info;
  f.title = "skipped: " + why;
  f.detail = why;
  r.findings.push_back(f);
  if (c.expect) {
    r.expect = c.expect;
    if (c.expect->value("outcome", "") == "skip") r.expect_met = true;
  }
  return r;
}

// The process groups this build has (third_party/Dependencies.cmake): a
// world_size > 1 cell needs Gloo on the CPU and NCCL on a GPU.
#ifndef NSA_HARNESS_HAVE_GLOO
#define NSA_HARNESS_HAVE_GLOO 0
#endif
#ifndef NSA_HARNESS_HAVE_NCCL
#define NSA_HARNESS_HAVE_NCCL 0
#endif
// The child's rule (nsa/dist/process_group.h): NCCL when each rank has a GPU
// of its own, which the pool gives when it lists enough (gpu_pool.h); Gloo on
// the CPU and when ranks share GPUs.
std::optional<std::string> missing_backend(const CellSpec& c, bool have_cuda, size_t gpus_listed) {
  if (c.train.world_size <= 1) return std::nullopt;
  const bool nccl = needs_gpu(c, have_cuda) && gpus_listed >= static_cast<size_t>(c.train.world_size);
  if (nccl ? NSA_HARNESS_HAVE_NCCL : NSA_HARNESS_HAVE_GLOO) return std::nullopt;
  return std::string("world_size ") + std::to_string(c.train.world_size) + " needs the " + (nccl ? "NCCL" : "Gloo") +
         " process group, which this build does not have";
}

// CUDA crashes re-run with more instruments; escalate_crashes wants the
// finished results side by side with their cells.
std::optional<std::string> escalate(std::vector<std::optional<CellResult>>& results, const std::vector<CellSpec>& cells,
              const supervisor::EscalationOptions& eo, const std::string& run_dir, const CellDir& cell_dir,
              const supervisor::AttemptRunner& run_attempt, std::ostream* log) {
  std::vector<CellResult> finished;
  std::vector<CellSpec> their_cells;
  std::vector<size_t> at;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i]) {
      finished.push_back(*results[i]);
      their_cells.push_back(cells[i]);
      at.push_back(i);
    }
  auto write_error = supervisor::escalate_crashes(finished, their_cells, eo, run_dir, cell_dir, run_attempt, log);
  for (size_t k = 0; k < at.size(); ++k) results[at[k]] = std::move(finished[k]);
  return write_error;
}

}  // namespace

std::string repro_command(const std::string& scenario_path, const std::string& cell_id) {
  return "nsa-harness run " + shell_quote(scenario_path) + " --only " + shell_quote(cell_id);
}

RunResult execute_cells(const Scenario& sc, const std::vector<CellSpec>& cells, const ExecuteOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult run;
  run.scenario = {{"name", sc.name}, {"file", o.scenario_path}, {"hash", sc.hash}, {"description", sc.description}};
  auto cancelled = [&] { return o.cancelled && o.cancelled(); };

  // Plan: what cannot run here is a skip; of the rest, what --resume can take as it is.
  std::vector<CellSpec> runnable;
  std::vector<CellResult> skips;
  for (auto& c : cells) {
    if (c.device == "cuda" && !o.have_cuda)
      skips.push_back(skipped(c, reason::no_cuda, "the cell needs a CUDA device and none is available here"));
    else if (auto why = missing_backend(c, o.have_cuda, o.gpus.size()))
      skips.push_back(skipped(c, reason::no_backend, *why));
    else
      runnable.push_back(c);
  }
  const ResumePlan plan = plan_resume(runnable, o.run_dir, o.resume, o.rerun);
  for (size_t i = 0; i < runnable.size(); ++i)
    if (plan.decisions[i].action == ResumeAction::rerun_changed && o.log)
      *o.log << fmt::format("nsa-harness: resume: re-running {}: {}\n", runnable[i].id, plan.decisions[i].why);
  run.completion.reused = plan.reused();
  run.completion.rerun_changed = plan.rerun_changed(runnable);

  supervisor::RunOptions ro;
  ro.run_dir = o.run_dir;
  ro.jobs = o.jobs;
  ro.progress = o.log;
  ro.env = o.env;
  ro.cancelled = o.cancelled;
  ro.cancel_signal = o.cancel_signal;
  // Without a GPU every cell computes on the CPU: a busy silent child is slow, not stuck.
  ro.supervisor.busy_is_progress = !o.have_cuda;
  auto argv = [&](const CellSpec&, const std::string& cell_dir) {
    return std::vector<std::string>{o.self_exe, "cell", "--spec", cell_dir + "/cell.json", "--out", cell_dir};
  };
  CellDir cell_dir = [&](const std::string& id) { return o.run_dir + "/cells/" + supervisor::cell_dir_name(id); };

  // Place on GPUs: no two running cells share one.
  std::optional<GpuPool> pool;
  GpuPlacement placement;
  if (!o.gpus.empty()) {
    pool.emplace(o.gpus, o.gpus_per_cell, o.cells_per_gpu);
    // Groups larger than the GPUs (the CLI refuses them as bad input) leave GPUs unmanaged, as with none listed.
    if (pool->groups() > 0) placement.pool = &*pool;
    placement.needs_gpu = [&](const CellSpec& c) { return needs_gpu(c, o.have_cuda); };
    // Every GPU cell, one after another, to its own wall cap: no honest wait is longer.
    for (auto& c : runnable)
      if (placement.needs_gpu(c)) placement.wait_deadline_s += supervisor::derived_max_wall_s(c);
  }

  // Schedule and supervise.
  Schedule s = schedule_cells(runnable, plan, argv, ro, placement);
  for (auto& r : s.results)
    if (r) attach_flight_recorder(*r, cell_dir(r->id), o.run_dir);

  // Escalate and confirm: more runs of cells that finished, never after a stop.
  // They run one at a time after the schedule, when every GPU group is free: the first serves.
  auto run_attempt = [&](const supervisor::EscalationAttempt& a, const std::string& attempt_dir) {
    const bool on_gpu = placement.pool && placement.needs_gpu(a.cell);
    const std::vector<VisibleGpu> held =
        on_gpu ? pool->gpus_of(GpuBlock{0, pool->count_for(a.cell.train.world_size)}) : std::vector<VisibleGpu>{};
    const std::vector<VisibleGpu>* group = on_gpu ? &held : nullptr;
    supervisor::RunOptions aro = placed_options(ro, placement, group);
    for (const auto& [k, v] : a.env) aro.env[k] = v;
    for (const auto& k : a.drop_env) aro.env.erase(k);
    auto wrapped = [&](const CellSpec& c, const std::string& d) {
      std::vector<std::string> v = a.argv_prefix;
      for (auto& x : argv(c, d)) v.push_back(x);
      return v;
    };
    CellResult r = supervisor::run_cell_in_dir(a.cell, wrapped, aro, attempt_dir);
    if (group) r.gpus = devices_of(*group), r.gpu_sharers = 1;  // re-runs run one at a time
    attach_flight_recorder(r, attempt_dir, o.run_dir);
    return r;
  };
  if (!s.harness_failure && !cancelled()) {
    supervisor::EscalationOptions eo;
    eo.enabled = o.escalate;
    eo.sanitizer = supervisor::find_compute_sanitizer();
    if (auto cause = escalate(s.results, runnable, eo, o.run_dir, cell_dir, run_attempt, o.log))
      s.harness_failure = HarnessFailure{"", *cause};
    else if (auto cause2 = confirm_timing_findings(s.results, runnable, o.run_dir, cell_dir, run_attempt, o.cancelled))
      s.harness_failure = HarnessFailure{"", *cause2};
  }

  // Collect, in the scenario's cell order; what did not finish is listed, not judged.
  for (auto& c : cells) {
    std::optional<CellResult> r;
    for (size_t i = 0; i < runnable.size() && !r; ++i)
      if (runnable[i].id == c.id) {
        if (!s.results[i]) break;
        r = s.results[i];
      }
    for (auto& k : skips)
      if (!r && k.id == c.id) r = k;
    if (!r) {
      run.completion.not_run.push_back(c.id);
      continue;
    }
    r->repro_command = repro_command(o.scenario_path, c.id);
    r->gates = c.gates;  // skipped cells too: the report shows what would have been checked
    run.cells.push_back(std::move(*r));
  }
  if (s.harness_failure) {
    run.completion.end = RunEnd::harness_failure;
    run.completion.harness_failure = s.harness_failure->cause;
  } else if (!run.completion.not_run.empty()) {
    run.completion.end = RunEnd::cancelled;
    const int sig = o.cancel_signal ? o.cancel_signal() : 0;
    run.completion.signal = sig > 0 ? signal_text(sig) : "";
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace harness::run
