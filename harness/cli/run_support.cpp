#include "harness/cli/run_support.h"

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "harness/cli/platform.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/environment.h"
#include "harness/trace/flight_recorder.h"
#ifdef NSA_WITH_CUPTI
#include "harness/trace/cupti_tracer.h"
#endif
#include "harness/supervisor/crash_escalation.h"
#include "harness/core/kernel_name.h"
#include "harness/supervisor/runner.h"
#include "harness/analysis/judgement.h"

namespace harness::cli {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CellResult skipped(const CellSpec& c, const std::string& why) {
  CellResult r;
  r.id = c.id;
  r.axes = c.axes;
  r.outcome = Outcome::skip;
  r.reason = std::string(reason::no_cuda);
  r.steps_planned = c.train.steps;
  Finding f;
  f.code = std::string(reason::no_cuda);
  f.severity = Severity::info;
  f.title = "skipped: " + why;
  f.detail = why;
  r.findings.push_back(f);
  if (c.expect) {
    r.expect = c.expect;
    r.expect_met = c.expect->value("outcome", "") == "skip";
  }
  return r;
}

// A crashed or killed CUDA cell leaves its last kernel launches in flight.bin:
// name the kernel in flight in the deciding finding.
void attach_flight_recorder(CellResult& r, const std::string& cell_dir, const std::string& run_dir) {
  std::string path = cell_dir + "/" + trace::kFlightRecorderFile;
  if (!std::filesystem::exists(path) || r.outcome == Outcome::pass || r.outcome == Outcome::skip) return;
  try {
    auto log = trace::read_flight_log(path);
    if (log.entries.empty()) return;
    nlohmann::json last = nlohmann::json::array();
    // The recorder keeps the symbol as launched (mangled); reports show "name<T>".
    auto readable = [](const std::string& symbol) { return readable_kernel_name(symbol); };
    for (size_t i = log.entries.size() > 8 ? log.entries.size() - 8 : 0; i < log.entries.size(); ++i)
      last.push_back({{"kernel", readable(log.entries[i].kernel)}, {"step", log.entries[i].step},
                      {"nvtx", log.entries[i].nvtx_path}});
    const std::string kernel = readable(log.entries.back().kernel);
    r.extra["flight_recorder"] = {{"launches", log.launches}, {"last", last}};
    for (auto& f : r.findings)
      if (r.reason && f.code == *r.reason) {
        f.evidence["last_kernel"] = kernel;
        f.evidence["last_kernels"] = last;
        f.title += " (last kernel launched: " + kernel + ")";
        if (f.location.empty()) f.location = "kernel " + kernel;
        break;
      }
    std::error_code ec;
    r.artifacts.push_back(std::filesystem::relative(path, run_dir, ec).string());
  } catch (const std::exception&) {
    // An unreadable recorder only costs the kernel name.
  }
}

// A finding that rests on time alone may be the machine's (another process
// took the cores), not the model's: such a cell is re-run once, in the same
// conditions, and the finding stands only if the re-run fails on time too
// (Megatron's re-run idea). Otherwise the re-run's result is the cell's, with
// the first run's finding kept as an info note.
template <class RunAttempt, class CellDir>
void confirm_timing_findings(std::vector<CellResult>& results, const std::vector<CellSpec>& cells,
                             const std::string& run_dir, CellDir cell_dir, RunAttempt run_attempt) {
  for (size_t i = 0; i < results.size() && i < cells.size(); ++i) {
    CellResult& first = results[i];
    if (!fails_on_timing_only(first)) continue;
    const Judgement j = judge(first);
    const std::string dir = cell_dir(first.id) + "/confirm";
    std::cerr << "nsa-harness: " << first.id << ": " << j.reason << " — re-running once to confirm\n";
    supervisor::EscalationAttempt again_spec;
    again_spec.cell = cells[i];
    CellResult again = run_attempt(again_spec, dir);
    std::error_code ec;
    Confirmation k;
    k.first_reason = j.reason;
    k.first_title = j.deciding ? j.deciding->title : j.reason;
    const Judgement j2 = judge(again);
    k.rerun_reason = j2.kind == Judgement::Kind::pass ? "" : j2.reason;
    k.repeated = fails_on_timing_only(again) || j2.reason == j.reason;
    k.rerun_dir = std::filesystem::relative(dir, run_dir, ec).string();
    if (k.repeated || j2.kind != Judgement::Kind::pass) {
      first.confirmation = k;  // it repeated (or the re-run failed otherwise): the first run stands
    } else {
      Finding note;
      note.code = "timing_not_repeated";
      note.severity = Severity::info;
      note.title = "first run: " + k.first_title + " — did not repeat on a re-run";
      note.detail = "The first run failed on time alone (" + j.reason +
                    "); the same cell re-run at once passed, so the slowness was the machine's, not the model's. "
                    "The re-run's result is the cell's; the first run is in " + first.id + "'s directory.";
      note.evidence = {{"first_run_steps_ms", nlohmann::json::array()}};
      for (auto& s : first.steps) note.evidence["first_run_steps_ms"].push_back(s.step_ms);
      again.findings.push_back(note);
      again.confirmation = k;
      again.artifacts.insert(again.artifacts.end(), first.artifacts.begin(), first.artifacts.end());
      first = std::move(again);
    }
    try {
      supervisor::write_file_atomic(cell_dir(first.id) + "/result.json", nlohmann::json(first).dump(2) + "\n");
    } catch (const std::exception& e) {
      first.extra["result_write_error"] = e.what();
    }
  }
}

}  // namespace

std::optional<Scenario> load_scenario_to_run(const std::string& path, const LoadOptions& options) {
  try {
    Scenario sc = load_scenario(path, options);
    const EnvironmentSettings env = read_environment_settings();
    for (auto& c : sc.cells) apply_environment(env, c);
    return sc;
  } catch (const ScenarioError& e) {
    for (auto& d : e.diagnostics) std::cerr << format_diagnostic(d);
    return std::nullopt;
  }
}

bool cuda_available() {
  static const bool have = at::hasCUDA();
  return have;
}

RunResult execute_cells(const Scenario& sc, const std::vector<CellSpec>& cells, const std::string& dir, int jobs,
                        bool resume, const std::string& self_exe, const std::string& scenario_path,
                        bool escalate) {
  auto t0 = std::chrono::steady_clock::now();
  RunResult run;
  run.started_at = now_iso8601();
  run.platform = detect_platform();
  run.scenario = {{"name", sc.name}, {"file", scenario_path}, {"hash", sc.hash}, {"description", sc.description}};

  std::vector<CellSpec> runnable;
  std::vector<CellResult> skips;
  for (auto& c : cells) {
    if (c.device == "cuda" && !cuda_available())
      skips.push_back(skipped(c, "the cell needs a CUDA device and none is available here"));
    else
      runnable.push_back(c);
  }
  supervisor::RunOptions ro;
  ro.run_dir = dir;
  ro.jobs = jobs;
  ro.resume = resume;
  ro.progress = &std::cerr;
  // Without a GPU every cell computes on the CPU: a busy silent child is slow, not stuck.
  ro.supervisor.busy_is_progress = !cuda_available();
#ifdef NSA_WITH_CUPTI
  // CUPTI sees NVTX ranges only when the injection library is named before the
  // child's first NVTX call.
  if (auto lib = trace::cupti_library_path(); !lib.empty()) ro.env[trace::kNvtxInjectionEnv] = lib;
#endif
  auto argv = [&](const CellSpec&, const std::string& cell_dir) {
    return std::vector<std::string>{self_exe, "cell", "--spec", cell_dir + "/cell.json", "--out", cell_dir};
  };
  auto cell_dir = [&](const std::string& id) { return dir + "/cells/" + supervisor::cell_dir_name(id); };
  auto results = runnable.empty() ? std::vector<CellResult>{} : supervisor::run_cells(runnable, argv, ro);
  for (auto& r : results) attach_flight_recorder(r, cell_dir(r.id), dir);

  // A CUDA crash is re-run where it can say more (crash_escalation.h).
  supervisor::EscalationOptions eo;
  eo.enabled = escalate;
  eo.sanitizer = supervisor::find_compute_sanitizer();
  auto run_attempt = [&](const supervisor::EscalationAttempt& a, const std::string& attempt_dir) {
    supervisor::RunOptions aro = ro;
    for (const auto& [k, v] : a.env) aro.env[k] = v;
    for (const auto& k : a.drop_env) aro.env.erase(k);
    auto wrapped = [&](const CellSpec& c, const std::string& d) {
      std::vector<std::string> v = a.argv_prefix;
      for (auto& x : argv(c, d)) v.push_back(x);
      return v;
    };
    CellResult r = supervisor::run_cell_in_dir(a.cell, wrapped, aro, attempt_dir);
    attach_flight_recorder(r, attempt_dir, dir);
    return r;
  };
  supervisor::escalate_crashes(results, runnable, eo, dir, cell_dir, run_attempt, &std::cerr);
  confirm_timing_findings(results, runnable, dir, cell_dir, run_attempt);

  // Keep the scenario's cell order in the report.
  for (auto& c : cells) {
    auto put = [&](CellResult r) {
      r.repro_command = "nsa-harness run " + scenario_path + " --only " + shell_quote(c.id);
      r.gates = c.gates;  // skipped cells too: the report shows what would have been checked
      run.cells.push_back(std::move(r));
    };
    bool found = false;
    for (auto& r : results)
      if (r.id == c.id) { put(r); found = true; break; }
    if (!found)
      for (auto& r : skips)
        if (r.id == c.id) { put(r); break; }
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace harness::cli
