#include "harness/supervisor/watchdog.h"

#include "harness/supervisor/host_memory.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "harness/protocol/events.h"
#include "harness/supervisor/event_tail.h"
#include "harness/supervisor/liveness.h"
#include "harness/trace/flight_recorder.h"

namespace harness::supervisor {
namespace {

// The CPUs the child may run on (its affinity mask), not the machine's: a cell
// pinned to 2 of 16 cores competes for those 2, and the load is judged against them.
int usable_cpus(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}
using Clock = std::chrono::steady_clock;


double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

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
                        Clock::time_point start, Clock::time_point last_progress, Clock::time_point now) {
  const auto after = [](Clock::time_point t0, double s) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  if (seconds(now - last_progress) >= spec.stall_timeout_s) return KillReason::stall;
  // The first-step and step deadlines are for a child that is still moving
  // (slow or livelocked): they fire only on progress seen after they expired.
  // A child that went quiet before is left to the stall deadline, so a
  // deadlock is called a hang, whichever deadline would have come first.
  if (!steps.first_step_done && now >= after(start, spec.first_step_timeout_s) &&
      last_progress >= after(start, spec.first_step_timeout_s))
    return KillReason::first_step_timeout;
  if (steps.open_step && now >= after(steps.step_began, spec.step_timeout_s) &&
      last_progress >= after(steps.step_began, spec.step_timeout_s))
    return KillReason::step_timeout;
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
  auto drain = [&](Clock::time_point now) {
    tail.poll(now, [&](const nlohmann::json& e, Clock::time_point arrived) {
      steps.on_event(e, arrived);
      if (hooks.on_event) hooks.on_event(e);
    });
  };
  auto last_event = [&] { return tail.last_line_time().value_or(start); };
  // Sample at least four times per stall window, and once right away, so
  // that a short deadline still sees two samples before it can fire.
  Liveness live(start, opt.busy_is_progress, std::min(kSampleIntervalS, spec.stall_timeout_s / 4));
  live.sample(start, process_cpu_s(run.pid), flight_launches(launch.cell_dir + "/" + trace::kFlightRecorderFile));
  const std::string flight_path = launch.cell_dir + "/" + trace::kFlightRecorderFile;
  size_t lines_seen = 0;
  const auto poll_every = std::chrono::duration<double>(opt.poll_interval_s);

  run.memory_limit_bytes = host_memory_limit_bytes();
  run.load_start = load_average_1min();
  run.cpus = usable_cpus(run.pid);
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
    if (tail.lines() != lines_seen) {
      lines_seen = tail.lines();
      live.on_event(last_event());
    }
    if (live.sample_due(now)) {
      live.sample(now, process_cpu_s(run.pid), flight_launches(flight_path));
      // A CPU child shares the cores with whatever else runs: at a load of 8 on
      // 2 CPUs its steps take ~4× longer without anything being wrong. The step
      // deadlines stretch by that measured contention (the stall deadline does
      // not: a blocked child uses no CPU however busy the machine is).
      if (opt.busy_is_progress && run.cpus > 0)
        if (auto load = load_average_1min()) run.deadline_stretch = std::max(run.deadline_stretch, *load / run.cpus);
    }
    WatchdogSpec stretched = spec;
    stretched.step_timeout_s *= run.deadline_stretch;
    stretched.first_step_timeout_s *= run.deadline_stretch;
    KillReason why = deadline_hit(stretched, opt, steps, start, live.last_progress(), now);
    if (why == KillReason::none && hooks.cancelled && hooks.cancelled()) why = KillReason::cancelled;
    if (why != KillReason::none) {
      run.killed_by = why;
      run.kill_at_s = seconds(now - start);
      run.since_last_event_s = seconds(now - last_event());
      run.since_last_progress_s = seconds(now - live.last_progress());
      run.last_progress_signal = live.last_signal();
      run.cpu_s_since_last_event = live.cpu_s_since_last_event();
      run.launches_since_last_event = live.launches_since_last_event();
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

  int first_signal = SIGTERM;
  if (run.killed_by == KillReason::cancelled && hooks.cancel_signal) first_signal = hooks.cancel_signal();
  ExitStatus status = child->kill_group(opt.kill_grace_s, first_signal > 0 ? first_signal : SIGTERM);
  drain(Clock::now());
  run.exit_code = status.exit_code;
  run.term_signal = status.term_signal;
  run.group_empty = child->group_empty();
  if (run.killed_by == KillReason::none) run.since_last_event_s = seconds(Clock::now() - last_event());
  run.load_end = load_average_1min();
  run.events = tail.events();
  run.event_lines = tail.lines();
  run.malformed_lines = tail.malformed_lines();
  run.wall_s = seconds(Clock::now() - start);
  return run;
}

}  // namespace harness::supervisor
