#include "harness/supervisor/run_findings.h"

#include <fmt/format.h>

#include <csignal>

#include "harness/protocol/events.h"
#include "harness/core/kernel_name.h"
#include "harness/core/text.h"
#include "harness/supervisor/error_text.h"
#include "harness/supervisor/host_memory.h"
#include "harness/supervisor/phase_stack.h"
#include "harness/supervisor/stack_capture.h"
#include "harness/supervisor/stack_phase.h"

namespace harness::supervisor {
namespace {
using nlohmann::json;

constexpr size_t kStderrEvidenceLines = 40;
constexpr size_t kStacksEvidenceBytes = 16u << 10;
constexpr size_t kLastEvents = 10;
// A peak this close to the limit, sampled every poll, means the next
// allocations were what the kernel refused (page cache and the harness itself
// take the rest).
constexpr double kOomFraction = 0.8;

json open_phases_json(const std::vector<OpenPhase>& phases) {
  json out = json::array();
  for (const auto& p : phases) {
    json j{{"name", p.name}, {"t", p.t}};
    j["step"] = p.step ? json(*p.step) : json(nullptr);
    j["layer"] = p.layer ? json(*p.layer) : json(nullptr);
    out.push_back(j);
  }
  return out;
}

// What the child was doing: its open phases, stacks and last events.
void add_hang_evidence(const SupervisedRun& run, Finding& f) {
  auto phases = open_phases(run.events);
  auto step = run.step_in_progress ? run.step_in_progress : step_in_progress(run.events);
  f.step = step;
  f.location = describe(phases, step);
  f.evidence["open_phases"] = open_phases_json(phases);
  f.evidence["seconds_since_last_event"] = run.since_last_event_s;
  f.evidence["seconds_since_last_progress"] = run.since_last_progress_s;
  f.evidence["deadline_stretch"] = run.deadline_stretch;
  f.evidence["last_progress_signal"] = to_string(run.last_progress_signal);
  if (run.cpu_s_since_last_event >= 0) f.evidence["cpu_s_since_last_event"] = run.cpu_s_since_last_event;
  if (run.launches_since_last_event) f.evidence["launches_since_last_event"] = *run.launches_since_last_event;
  f.evidence["killed_after_s"] = run.kill_at_s;
  f.evidence["last_events"] = last_events(run.events, kLastEvents);
  if (!run.stacks) return;
  const auto& st = *run.stacks;
  f.evidence["stack_signal_delivered"] = st.signalled;
  f.evidence["stacks_written"] = st.stacks_written;
  f.evidence["debugger"] = st.debugger;
  f.evidence["debugger_status"] = st.debugger_status;
  std::string stacks = read_tail(run.cell_dir + "/" + protocol::kStacksFile, kStacksEvidenceBytes);
  if (!stacks.empty()) f.evidence["phase_stack"] = stacks;
  std::string gdb = read_tail(run.cell_dir + "/gdb_stacks.txt", kStacksEvidenceBytes);
  if (!gdb.empty()) f.evidence["native_stacks"] = gdb;
  // Without a debugger, the handler's own frames resolved to function and
  // file:line (symbolize.h) stand in for its stacks.
  const std::string symbolized = read_tail(run.cell_dir + "/" + kSymbolizedStacksFile, kStacksEvidenceBytes);
  if (!symbolized.empty()) {
    f.evidence["symbolized_stacks"] = symbolized;
    if (gdb.empty()) gdb = symbolized;
  }
  // The stacks taken at the kill place the stall better than the last event did.
  if (auto sp = phase_from_stacks(stacks, gdb); sp && !sp->phases.empty()) {
    if (sp->step) f.step = sp->step;
    std::string where = sp->phases;
    for (size_t p = where.find(" > "); p != std::string::npos; p = where.find(" > ", p)) where.replace(p, 3, " / ");
    f.location = (f.step ? "step " + std::to_string(*f.step) + " / " : std::string()) + where;
    f.evidence["phase_from_stacks"] = {{"phase", sp->top}, {"phases", sp->phases}, {"native", sp->from_native},
                                       {"phase_from_events", describe(phases, step)}};
  }
}
}  // namespace

std::string last_lines(const std::string& text, size_t n) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (size_t k = 0; k < n && pos != std::string::npos && pos > 0; ++k) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// Liveness (liveness.h) saw the child's CPU time or kernel launches move after
// its last event: computing, not blocked.
bool working_without_events(const SupervisedRun& run) {
  return run.last_progress_signal == ProgressSignal::cpu || run.last_progress_signal == ProgressSignal::launches;
}
// What moved, in a finding's words (working_without_events is true).
std::string_view working_signal(const SupervisedRun& run) {
  return run.last_progress_signal == ProgressSignal::cpu ? "CPU time" : "kernel launches";
}

Finding watchdog_finding(const SupervisedRun& run) {
  Finding f;
  f.severity = Severity::blocking;
  add_hang_evidence(run, f);
  const std::string where = f.location.empty() ? "" : " in " + f.location;
  switch (run.killed_by) {
    case KillReason::stall:
      f.code = std::string(reason::stall);
      f.title = fmt::format("no progress for {:.1f} s{}", run.since_last_progress_s, where);
      f.detail = fmt::format("Nothing moved for {:.1f} s (stall deadline): no event (the last came {:.1f} s before "
                             "the kill), {}{}. The child was killed after its stacks were collected: a deadlock, a "
                             "blocking wait or a kernel that never returns.",
                             run.since_last_progress_s, run.since_last_event_s,
                             run.cpu_s_since_last_event >= 0
                                 ? fmt::format("{:.2f} s of CPU time since then", run.cpu_s_since_last_event)
                                 : std::string("CPU time unknown"),
                             run.launches_since_last_event
                                 ? fmt::format(", {} kernel launches", *run.launches_since_last_event)
                                 : std::string());
      break;
    case KillReason::first_step_timeout:
      f.code = std::string(reason::first_step_timeout);
      f.title = fmt::format("no step finished within {:.1f} s{}", run.kill_at_s, where);
      f.detail = fmt::format("The first step_end did not arrive within the first-step deadline ({:.1f} s "
                             "after start); the last event came {:.1f} s before the kill.",
                             run.kill_at_s, run.since_last_event_s);
      if (working_without_events(run))
        f.detail += fmt::format(" The child kept working (its {} moved after that event; {:.1f} s of CPU since): "
                                "slow, not stuck — a longer first_step_timeout_s would let it finish.",
                                working_signal(run),
                                run.cpu_s_since_last_event);
      break;
    default: {  // step_timeout or the overall wall cap: events were still flowing
      f.code = std::string(reason::step_timeout);
      const bool wall = run.killed_by == KillReason::max_wall;
      f.title = wall ? fmt::format("run exceeded its wall-time cap ({:.1f} s){}", run.kill_at_s, where)
                     : fmt::format("step {} ran {:.1f} s without ending",
                                   run.step_in_progress.value_or(-1), run.step_elapsed_s);
      if (run.since_last_event_s > 0.5 * run.step_elapsed_s && working_without_events(run)) {
        // Silent but busy: liveness (liveness.h) saw CPU time or kernel launches move.
        f.detail = fmt::format("No event for {:.1f} s, but the child kept working (its {} moved last; {:.1f} s of "
                               "CPU in that time): computing, not blocked — slow, not stuck.",
                               run.since_last_event_s, working_signal(run), run.cpu_s_since_last_event);
      } else {
        f.detail = fmt::format("Events kept arriving ({} progress/phase events during the step, {:.2f} per "
                               "second) but the step did not end: slow or livelocked, not stuck.",
                               run.step_events, run.progress_rate);
      }
      if (run.deadline_stretch > 1.0)
        f.detail += fmt::format(" The step deadlines were stretched ×{:.1f} for the machine's load.", run.deadline_stretch);
      f.evidence["step_elapsed_s"] = run.step_elapsed_s;
      f.evidence["progress_events"] = run.step_events;
      f.evidence["progress_rate_per_s"] = run.progress_rate;
      f.evidence["wall_cap"] = wall;
    }
  }
  return f;
}

Finding signal_finding(const SupervisedRun& run, const std::optional<ErrorDiagnosis>& text,
                       const std::string& stderr_tail) {
  const int sig = run.term_signal.value_or(0);
  Finding f;
  f.code = std::string(reason::signal);
  f.severity = Severity::blocking;
  f.title = "killed by " + signal_name(sig);
  f.detail = fmt::format("The child died of {} (signal {}).", signal_name(sig), sig);
  auto step = step_in_progress(run.events);
  f.step = step;
  f.location = describe(open_phases(run.events), step);
  f.evidence = {{"signal", sig}, {"signal_name", signal_name(sig)},
                {"stderr_tail", last_lines(stderr_tail, kStderrEvidenceLines)},
                {"last_events", last_events(run.events, kLastEvents)}};
  if (text) f.evidence["message"] = text->message;
  // SIGKILL that no deadline of ours sent comes from outside: with the peak
  // near the limit, that is the out-of-memory killer.
  if (sig == SIGKILL && run.killed_by == KillReason::none) {
    if (run.peak_rss_bytes) f.evidence["peak_rss_bytes"] = *run.peak_rss_bytes;
    if (run.memory_limit_bytes) f.evidence["memory_limit_bytes"] = *run.memory_limit_bytes;
    const bool near_limit = run.peak_rss_bytes && run.memory_limit_bytes &&
                            double(*run.peak_rss_bytes) >= kOomFraction * double(*run.memory_limit_bytes);
    if (near_limit) {
      f.code = std::string(reason::out_of_memory);
      f.title = "killed for host memory: " + gib_text(*run.peak_rss_bytes) + " resident of " +
                gib_text(*run.memory_limit_bytes);
      f.detail = fmt::format(
          "The child died of SIGKILL, which no deadline of the harness sent, after its resident memory reached {} "
          "of the {} this machine allows: the kernel's out-of-memory killer. Use a smaller model, batch or "
          "sequence on this machine, or a larger one.",
          gib_text(*run.peak_rss_bytes), gib_text(*run.memory_limit_bytes));
    } else {
      f.title = "killed by SIGKILL from outside the harness";
      f.detail = "The child died of SIGKILL, which no deadline of the harness sent" +
                 (run.peak_rss_bytes ? " (peak resident memory " + gib_text(*run.peak_rss_bytes) + ")" : std::string()) +
                 ": another process, a job scheduler or the out-of-memory killer.";
    }
  }
  return f;
}

namespace {
// An allocation that failed: how much was asked, what the device or host had,
// and where (step and phase come with the finding).
void describe_oom(const SupervisedRun& run, const ErrorDiagnosis& d, Finding& f) {
  const OomSizes sizes = parse_oom_sizes(d.message);
  const bool cuda = d.message.find("CUDA") != std::string::npos || d.message.find("cuda") != std::string::npos ||
                    d.message.find("GPU") != std::string::npos;
  f.title = "out of memory";
  if (sizes.requested_bytes) {
    f.evidence["requested_bytes"] = *sizes.requested_bytes;
    f.title += ": asked for " + gib_text(static_cast<std::uint64_t>(*sizes.requested_bytes));
  }
  if (sizes.free_bytes) f.evidence["free_bytes"] = *sizes.free_bytes;
  if (sizes.total_bytes) f.evidence["total_bytes"] = *sizes.total_bytes;
  if (!cuda && run.memory_limit_bytes) {
    // The host allocator's message names no capacity: the machine's (or cgroup's) limit does.
    f.evidence["total_bytes"] = static_cast<double>(*run.memory_limit_bytes);
    if (run.peak_rss_bytes) f.evidence["peak_rss_bytes"] = static_cast<double>(*run.peak_rss_bytes);
  }
  std::string of;
  if (f.evidence.contains("free_bytes"))
    of += gib_text(static_cast<std::uint64_t>(f.evidence["free_bytes"].get<double>())) + " free";
  if (f.evidence.contains("total_bytes"))
    of += (of.empty() ? "" : " of ") + gib_text(static_cast<std::uint64_t>(f.evidence["total_bytes"].get<double>())) +
          (of.empty() ? " in all" : "");
  if (!of.empty()) f.title += " (" + std::string(cuda ? "device: " : "host: ") + of + ")";
  f.detail = std::string("The ") + (cuda ? "device" : "host") + " allocator refused an allocation: " + d.message;
}
}  // namespace

Finding error_finding(const SupervisedRun& run, const ErrorDiagnosis& d, const std::string& stderr_tail) {
  Finding f;
  f.code = d.reason;
  f.severity = Severity::blocking;
  f.step = d.step ? d.step : step_in_progress(run.events);
  f.evidence = {{"message", d.message}, {"source", d.source},
                {"stderr_tail", last_lines(stderr_tail, kStderrEvidenceLines)},
                {"last_events", last_events(run.events, kLastEvents)}};
  if (!d.op.empty()) f.evidence["op"] = d.op;
  if (d.is_cuda()) {
    const std::string symbol = last_kernel_from(run.events);
    const std::string kernel = symbol.empty() ? "" : readable_kernel_name(symbol);
    f.title = d.reason == reason::cuda_illegal_address ? "CUDA illegal memory access (error 700)" : "CUDA error";
    if (!kernel.empty()) {
      f.title += " after kernel " + kernel;
      f.location = "kernel " + kernel;
      f.evidence["last_kernel"] = kernel;
    }
    f.detail = "The CUDA context reported: " + d.message +
               ". A CUDA error is sticky: everything after it in the process fails too.";
  } else if (d.reason == reason::autograd_inplace) {
    f.title = d.op.empty() ? "autograd: tensor modified by an inplace operation"
                           : "autograd: output of " + d.op + " modified by an inplace operation";
    if (!d.op.empty()) f.location = "op " + d.op;
    f.detail = "Backward found a tensor saved for gradient computation overwritten in place: " + d.message;
  } else if (d.reason == reason::sanitizer_report) {
    f.title = "sanitizer: " + (d.message.size() > 160 ? d.message.substr(0, 160) + "…" : d.message);
    f.detail = "The child, built with a sanitizer, stopped on its report (the full report with its stacks is in "
               "stderr.log): " + d.message;
  } else if (d.reason == reason::out_of_memory) {
    describe_oom(run, d, f);
  } else if (d.reason == reason::index_out_of_range) {
    f.title = "index out of range";
    f.detail = "An index fell outside its tensor: " + d.message;
  } else {
    f.title = "exception: " + (d.message.size() > 160 ? d.message.substr(0, 160) + "…" : d.message);
    f.detail = "The child stopped on an exception: " + d.message;
  }
  // Where it was thrown (the child's phase stack at the throw) beats what the
  // events still show open: the phases' guards closed them while unwinding.
  if (f.location.empty() && d.phase.find(" > ") != std::string::npos) {
    // "step 3 > step > forward" → "step 3 / forward": the loop's own "step" frame repeats the step.
    for (const auto& frame : split(d.phase, '>')) {
      const std::string name = trim(frame);
      if (name == "step" || name.empty()) continue;
      f.location += (f.location.empty() ? "" : " / ") + name;
    }
  }
  if (f.location.empty()) f.location = describe(open_phases(run.events), f.step);
  return f;
}

Finding plain_finding(const SupervisedRun& run, std::string_view code, std::string title, std::string detail,
                      const std::string& stderr_tail) {
  Finding f;
  f.code = std::string(code);
  f.severity = Severity::blocking;
  f.title = std::move(title);
  f.detail = std::move(detail);
  f.evidence = {{"stderr_tail", last_lines(stderr_tail, kStderrEvidenceLines)},
                {"event_lines", run.event_lines},
                {"malformed_lines", run.malformed_lines},
                {"last_events", last_events(run.events, kLastEvents)}};
  if (!run.launch_error.empty()) f.evidence["launch_error"] = run.launch_error;
  return f;
}

}  // namespace harness::supervisor
