#include "harness/supervisor/watchdog.h"

#include "harness/supervisor/host_memory.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "harness/protocol/events.h"
#include "harness/supervisor/event_tail.h"

namespace harness::supervisor {
namespace {
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A child busier than this since its last event is computing, not blocked.
constexpr double kBusyFraction = 0.5;

// User + system CPU seconds of process `pid` (all its threads), from
// /proc/<pid>/stat fields 14 and 15; nullopt when it cannot be read.
std::optional<double> process_cpu_s(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command name may contain spaces
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (utime + stime) / ticks;
}

// Deadline state, advanced one event at a time in arrival order.
struct StepClock {
  bool first_step_done = false;
  std::optional<int> open_step;
  Clock::time_point step_began{};
  int step_events = 0;

  void on_event(const nlohmann::json& e, Clock::time_point arrived) {
    const std::string kind = e.value("ev", "");
    if (kind == protocol::ev::step_begin) {
      open_step = e.value("step", 0);
      step_began = arrived;
      step_events = 0;
    } else if (kind == protocol::ev::step_end) {
      first_step_done = true;
      open_step.reset();
    } else if (open_step && (kind == protocol::ev::progress || kind == protocol::ev::phase_begin ||
                             kind == protocol::ev::phase_end)) {
      ++step_events;
    }
  }
};

KillReason deadline_hit(const WatchdogSpec& spec, const SupervisorOptions& opt, const StepClock& steps,
                        Clock::time_point start, Clock::time_point last_activity, Clock::time_point now) {
  if (seconds(now - last_activity) >= spec.stall_timeout_s) return KillReason::stall;
  if (!steps.first_step_done && seconds(now - start) >= spec.first_step_timeout_s)
    return KillReason::first_step_timeout;
  if (steps.open_step && seconds(now - steps.step_began) >= spec.step_timeout_s) return KillReason::step_timeout;
  if (opt.max_wall_s > 0 && seconds(now - start) >= opt.max_wall_s) return KillReason::max_wall;
  return KillReason::none;
}
}  // namespace

std::string_view to_string(KillReason r) {
  switch (r) {
    case KillReason::none: return "none";
    case KillReason::stall: return "stall";
    case KillReason::first_step_timeout: return "first_step_timeout";
    case KillReason::step_timeout: return "step_timeout";
    case KillReason::max_wall: return "max_wall";
    case KillReason::cancelled: return "cancelled";
  }
  return "none";
}

SupervisedRun supervise(const ChildLaunch& launch, const WatchdogSpec& spec, const Hooks& hooks,
                        const SupervisorOptions& opt) {
  SupervisedRun run;
  run.cell_dir = launch.cell_dir;
  const auto start = Clock::now();
  std::optional<ChildProcess> child;
  try {
    child.emplace(ChildProcess::spawn(launch));
  } catch (const std::exception& e) {
    run.launch_error = e.what();
    run.wall_s = seconds(Clock::now() - start);
    return run;
  }
  run.pid = child->pid();

  EventTail tail(launch.cell_dir + "/" + protocol::kEventsFile);
  StepClock steps;
  size_t seen = 0;
  auto drain = [&](Clock::time_point now) {
    tail.poll(now);
    for (; seen < tail.events().size(); ++seen) {
      steps.on_event(tail.events()[seen], tail.arrivals()[seen]);
      if (hooks.on_event) hooks.on_event(tail.events()[seen]);
    }
  };
  auto last_activity = [&] { return tail.last_line_time().value_or(start); };
  // CPU time of the child when its last event arrived (busy_is_progress).
  std::optional<double> cpu_at_last_event = opt.busy_is_progress ? process_cpu_s(run.pid) : std::nullopt;
  size_t lines_seen = 0;
  const auto poll_every = std::chrono::duration<double>(opt.poll_interval_s);

  run.memory_limit_bytes = host_memory_limit_bytes();
  while (true) {
    // The peak so far, while /proc still has it: a child the kernel kills for
    // memory leaves no other trace of how much it held.
    if (auto peak = process_peak_rss_bytes(run.pid)) run.peak_rss_bytes = std::max(*peak, run.peak_rss_bytes.value_or(0));
    // Poll the child before the file: lines written before it exited are then
    // always read by the drain that follows.
    bool exited = child->poll().has_value();
    auto now = Clock::now();
    drain(now);
    if (exited) break;
    if (opt.busy_is_progress && tail.lines() != lines_seen) {
      lines_seen = tail.lines();
      cpu_at_last_event = process_cpu_s(run.pid);
    }
    KillReason why = deadline_hit(spec, opt, steps, start, last_activity(), now);
    if (why == KillReason::stall && opt.busy_is_progress && cpu_at_last_event) {
      auto cpu_now = process_cpu_s(run.pid);
      const double quiet = seconds(now - last_activity());
      if (cpu_now) run.cpu_s_since_last_event = *cpu_now - *cpu_at_last_event;
      if (cpu_now && run.cpu_s_since_last_event >= kBusyFraction * quiet) {
        // Computing, not blocked: no stall; a first step that overruns is a
        // slow step, not a hang; the step and wall deadlines still apply.
        WatchdogSpec busy = spec;
        busy.stall_timeout_s = std::numeric_limits<double>::infinity();
        why = deadline_hit(busy, opt, steps, start, last_activity(), now);
        if (why == KillReason::first_step_timeout) why = KillReason::step_timeout;
      }
    }
    if (why == KillReason::none && hooks.cancelled && hooks.cancelled()) why = KillReason::cancelled;
    if (why != KillReason::none) {
      run.killed_by = why;
      run.kill_at_s = seconds(now - start);
      run.since_last_event_s = seconds(now - last_activity());
      if (steps.open_step) {
        run.step_in_progress = steps.open_step;
        run.step_elapsed_s = seconds(now - steps.step_began);
        run.step_events = steps.step_events;
        run.progress_rate = run.step_elapsed_s > 0 ? steps.step_events / run.step_elapsed_s : 0.0;
      }
      // A cancelled run is the user's choice, not evidence of a bug: no stacks.
      if (why != KillReason::cancelled) run.stacks = capture_stacks(*child, launch.cell_dir, opt.stacks);
      break;
    }
    std::this_thread::sleep_for(poll_every);
  }

  ExitStatus status = child->kill_group(opt.kill_grace_s);
  drain(Clock::now());
  run.exit_code = status.exit_code;
  run.term_signal = status.term_signal;
  run.group_empty = child->group_empty();
  if (run.killed_by == KillReason::none) run.since_last_event_s = seconds(Clock::now() - last_activity());
  run.events = tail.events();
  run.event_lines = tail.lines();
  run.malformed_lines = tail.malformed_lines();
  run.wall_s = seconds(Clock::now() - start);
  return run;
}

}  // namespace harness::supervisor
