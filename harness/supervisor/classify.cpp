#include "harness/supervisor/classify.h"
#include "harness/supervisor/stack_capture.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "harness/core/text.h"
#include "harness/protocol/events.h"
#include "harness/supervisor/classify_steps.h"
#include "harness/supervisor/error_text.h"
#include "harness/supervisor/rank_group.h"
#include "harness/supervisor/run_findings.h"

namespace harness::supervisor {
namespace {
using nlohmann::json;
namespace fs = std::filesystem;

std::vector<json> events_of(const std::vector<json>& events, std::string_view kind) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("ev", "") == kind) out.push_back(e);
  return out;
}

// The child's own diagnoses; a malformed one is kept as a warning about the
// protocol rather than dropped silently.
std::vector<Finding> child_findings(const std::vector<json>& events) {
  std::vector<Finding> out;
  for (const auto& e : events_of(events, protocol::ev::finding)) {
    try {
      out.push_back(e.at("finding").get<Finding>());
    } catch (const std::exception& ex) {
      Finding f;
      f.code = std::string(reason::protocol);
      f.severity = Severity::warning;
      f.title = "unreadable finding event";
      f.detail = ex.what();
      f.evidence = {{"event", e}};
      out.push_back(std::move(f));
    }
  }
  return out;
}

// The blocking finding with the lowest step; findings without a step come last.
const Finding* first_blocking(const std::vector<Finding>& findings) {
  const Finding* best = nullptr;
  for (const auto& f : findings) {
    if (f.severity != Severity::blocking) continue;
    if (!best || (f.step && (!best->step || *f.step < *best->step))) best = &f;
  }
  return best;
}

std::vector<std::string> artifacts(const SupervisedRun& run) {
  std::vector<std::string> out;
  for (const char* name : {protocol::kEventsFile, protocol::kStderrFile, protocol::kStacksFile, "gdb_stacks.txt",
                           kSymbolizedStacksFile, protocol::kTraceFile}) {
    fs::path p = fs::path(run.cell_dir) / name;
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    out.push_back(run.artifacts_relative_to.empty() ? p.string()
                                                    : fs::relative(p, run.artifacts_relative_to, ec).string());
  }
  return out;
}

struct Decision {
  Outcome outcome;
  Finding finding;
};

// The child exited on its own (or died of a signal): decide from its last words.
Decision decide_exit(const SupervisedRun& run, const std::vector<Finding>& found,
                     const std::optional<Finding>& slow) {
  const std::string stderr_tail = read_tail(run.cell_dir + "/" + protocol::kStderrFile, kStderrTailBytes);
  const auto errors = events_of(run.events, protocol::ev::error);
  auto text = diagnose_error_text(errors, stderr_tail);
  if (run.term_signal) {
    // An uncaught C++ exception ends in abort(): an error with its text, not a bare SIGABRT.
    if (text && (text->is_cuda() || *run.term_signal == SIGABRT))
      return {text->outcome, error_finding(run, *text, stderr_tail)};
    return {Outcome::crash, signal_finding(run, text, stderr_tail)};
  }
  const bool no_events = run.events.empty();
  if (run.exit_code.value_or(0) != 0) {
    if (text) return {text->outcome, error_finding(run, *text, stderr_tail)};
    if (no_events && run.malformed_lines > 0)
      return {Outcome::crash, plain_finding(run, reason::protocol, "child wrote no usable events",
                                            "Every line of events.jsonl was malformed.", stderr_tail)};
    return {Outcome::crash,
            plain_finding(run, reason::exit_nonzero, "exited with status " + std::to_string(*run.exit_code),
                          "The child exited non-zero without an error event or error text.", stderr_tail)};
  }
  if (no_events)
    return {Outcome::crash, plain_finding(run, reason::protocol, "child wrote no usable events",
                                          std::to_string(run.malformed_lines) + " malformed line(s), no event.",
                                          stderr_tail)};
  if (!errors.empty() && text) return {text->outcome, error_finding(run, *text, stderr_tail)};
  if (events_of(run.events, protocol::ev::done).empty())
    return {Outcome::crash, plain_finding(run, reason::protocol, "exited 0 without a done event",
                                          "The child stopped early but claimed success.", stderr_tail)};
  for (const auto& f : found)
    if (f.code == reason::no_cuda) return {Outcome::skip, f};
  if (const Finding* b = first_blocking(found)) return {Outcome::fail, *b};
  if (slow) return {Outcome::slow_step, *slow};
  return {Outcome::pass, Finding{}};
}
}  // namespace

// The tables a later stage reads land in typed fields; the rest are kept as
// written. A table that does not parse is kept as written too, with a note
// saying why: the cell's outcome does not hang on an observer's record.
static void read_probe_tables(const std::vector<json>& events, CellResult& r) {
  for (const auto& p : events_of(events, protocol::ev::probe)) {
    const std::string name = p.value("name", "unnamed");
    const json data = p.value("data", json::object());
    try {
      if (name == "probe_costs") r.probe_costs = data.get<std::vector<ProbeCost>>();
      else if (name == "gates") r.gate_stats = data.get<GateStats>();
      else if (name == "trace") r.trace = data.get<TraceSummary>();
      else if (name == "cuda_graph") r.cuda_graph = data.get<CudaGraphRecord>();
      else if (name == "weight_copies") r.weight_copies = data.get<WeightCopiesRecord>();
      else r.probe_tables[name] = data;
    } catch (const json::exception& e) {
      r.probe_tables[name] = data;
      r.extra["unreadable_probe_table"] = name + ": " + e.what();
    }
  }
}

bool expectation_met(const json& expect, Outcome outcome, const std::optional<std::string>& reason,
                     const std::vector<Finding>& findings) {
  if (!expect.is_object() || !expect.contains("outcome")) return false;
  if (expect.at("outcome") != to_string(outcome)) return false;
  if (expect.contains("reason") && !expect.at("reason").is_null()) {
    if (reason) {
      if (expect.at("reason") != *reason) return false;
      // Where and when the deciding finding puts it, when the expectation says:
      // `location` is a word of its location ("backward"), `step` its step.
      for (const auto& f : findings) {
        if (f.code != *reason) continue;
        if (expect.contains("location") && f.location.find(expect.at("location").get<std::string>()) == std::string::npos)
          return false;
        if (expect.contains("step") && (!f.step || *f.step != expect.at("step").get<int>())) return false;
        return true;
      }
      return !expect.contains("location") && !expect.contains("step");
    }
    // A passing cell has no deciding reason; an expected warning must be among
    // its findings (where and when it says, if the expectation says).
    for (const auto& f : findings) {
      if (expect.at("reason") != f.code) continue;
      if (expect.contains("location") && f.location.find(expect.at("location").get<std::string>()) == std::string::npos)
        continue;
      if (expect.contains("step") && (!f.step || *f.step != expect.at("step").get<int>())) continue;
      return true;
    }
    return false;
  }
  return true;
}

CellResult classify(const CellSpec& spec, const SupervisedRun& run) {
  if (!run.ranks.empty()) return classify_ranks(spec, run);
  CellResult r;
  r.id = spec.id;
  r.axes = spec.axes;
  r.steps_planned = spec.train.steps;
  r.steps = steps_from_events(run.events);
  r.steps_completed = static_cast<int>(r.steps.size());
  r.metrics = metrics_from(r.steps, run.events);
  r.wall_s = run.wall_s;
  r.exit_code = run.exit_code;
  r.term_signal = run.term_signal;
  r.artifacts = artifacts(run);
  if (!spec.scenario_file.empty())
    r.repro_command = "nsa-harness run " + shell_quote(spec.scenario_file) + " --only " + shell_quote(spec.id);
  read_probe_tables(run.events, r);
  r.malformed_event_lines = run.malformed_lines;

  std::vector<Finding> found = child_findings(run.events);
  r.flags = spec.flags;
  r.faults = spec.faults;
  r.from_environment = spec.from_environment;
  for (const auto& [name, probe] : spec.probes)
    if (probe.enabled && probe.every > 1) r.sampled_probes[name] = probe.every;
  r.gates = spec.gates;
  r.step_noise = step_noise(r.steps);
  if (run.load_start) r.load = MachineLoad{*run.load_start, run.load_end.value_or(*run.load_start), run.cpus};
  // The step-time limit is not judged on a busy machine or a shared GPU (results.h machine_busy); the
  // relative check (k × the cell's own median, beyond its noise) still is.
  r.gpu_sharers = run.gpu_sharers;
  const bool busy = (r.load && machine_busy(*r.load)) || gpu_shared(r.gpu_sharers);
  std::optional<Finding> slow = find_slow_step(r.steps, spec.watchdog, spec.gates.max_step_ms);
  // Host syncs explain a slow step whatever the load (their count does not
  // depend on it); any other slowness against the absolute limit is the
  // machine's when it was busy, and only the relative check stands.
  if (busy && slow && slow->code != reason::slow_host_syncs) slow = find_slow_step(r.steps, spec.watchdog);
  Decision d{Outcome::pass, Finding{}};
  if (!run.launch_error.empty()) {
    d = {Outcome::crash, plain_finding(run, kReasonLaunchFailed, "could not start the child",
                                       run.launch_error, "")};
  } else if (run.killed_by == KillReason::cancelled) {
    d = {Outcome::skip, plain_finding(run, kReasonCancelled, "run cancelled before the cell finished", "", "")};
    d.finding.severity = Severity::info;
  } else if (run.killed_by != KillReason::none) {
    // Only a stall (nothing moved at all) is a hang; a first step that overran
    // while the child kept progressing is slow or livelocked: a step timeout.
    const bool hang = run.killed_by == KillReason::stall;
    d = {hang ? Outcome::hang : Outcome::step_timeout, watchdog_finding(run)};
  } else {
    d = decide_exit(run, found, slow);
  }

  r.outcome = d.outcome;
  if (d.outcome != Outcome::pass) r.reason = d.finding.code;
  // The deciding finding first; the child's own findings after it, once each.
  if (!d.finding.code.empty()) r.findings.push_back(d.finding);
  for (auto& f : found) {
    bool same = f.code == d.finding.code && f.step == d.finding.step && f.title == d.finding.title;
    if (!same) r.findings.push_back(std::move(f));
  }
  // A slow step that did not decide the outcome is still worth a warning.
  if (slow && d.outcome != Outcome::slow_step) {
    slow->severity = Severity::warning;
    r.findings.push_back(*slow);
  }
  if (spec.expect) {
    r.expect = spec.expect;
    r.expect_met = expectation_met(*spec.expect, r.outcome, r.reason, r.findings);
  }
  return r;
}

}  // namespace harness::supervisor
