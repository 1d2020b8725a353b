#pragma once
// The watchdog loop: run one child, tail its events, apply the deadlines of a
// WatchdogSpec (cell_spec.h), and on a deadline collect stacks and kill the
// process group. What happened is returned as a plain value for classify().
//
//   stall_timeout_s       no sign of progress at all for that long     → stall
//                         (no event, no CPU time, no kernel launch: liveness.h)
//   first_step_timeout_s  start → first step_end while progressing     → step_timeout
//   step_timeout_s        a step_begin without its step_end that long  → step_timeout
//                         (events may still flow: slow or livelock)
//   max_wall_s            the whole run (SupervisorOptions)            → max_wall
// All deadlines apply at once; the first to expire decides. Every wait in here
// has a deadline, so the harness itself cannot hang on a child.
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/cell_spec.h"
#include "harness/supervisor/child_process.h"
#include "harness/supervisor/liveness.h"
#include "harness/supervisor/stack_capture.h"

namespace harness::supervisor {

enum class KillReason { none, stall, first_step_timeout, step_timeout, max_wall, cancelled };
std::string_view to_string(KillReason r);

struct SupervisorOptions {
  double poll_interval_s = 0.05;
  double kill_grace_s = 3.0;     // SIGTERM → SIGKILL
  double max_wall_s = 0.0;       // 0: no overall cap beyond the other deadlines
  // The child computes on the CPU only (no GPU it could be spin-waiting on):
  // its CPU time counts as a sign of progress (liveness.h).
  bool busy_is_progress = false;
  StackCaptureOptions stacks;
};

struct Hooks {
  std::function<void(const nlohmann::json& event)> on_event;  // each parsed event, in order
  std::function<bool()> cancelled;                            // polled; true kills the child
  // The signal a cancelled child's group gets before the grace period and
  // SIGKILL (the harness forwards the SIGINT or SIGTERM it received); unset: SIGTERM.
  std::function<int()> cancel_signal;
};

struct SupervisedRun {
  std::string cell_dir;
  std::string artifacts_relative_to;  // the run dir; classify lists artifacts relative to it (absolute if empty)
  std::vector<nlohmann::json> events;
  size_t event_lines = 0;        // complete lines, parsed or not
  size_t malformed_lines = 0;
  std::string launch_error;      // non-empty: the child never started
  int pid = -1;
  std::optional<int> exit_code;
  std::optional<int> term_signal;
  bool group_empty = true;       // every process of the group confirmed gone
  double wall_s = 0.0;

  KillReason killed_by = KillReason::none;
  double kill_at_s = 0.0;                  // since start, when the deadline fired
  double since_last_event_s = 0.0;         // at the kill (or at exit)
  double since_last_progress_s = 0.0;      // at the kill: since any liveness signal last moved
  ProgressSignal last_progress_signal = ProgressSignal::start;  // which liveness signal moved last
  double cpu_s_since_last_event = -1;      // the child's CPU time in that interval; -1 = unknown
  std::optional<std::uint64_t> launches_since_last_event;  // kernel launches in it (CUDA, CUPTI on)
  std::optional<int> step_in_progress;     // step begun and not ended at the kill
  double step_elapsed_s = 0.0;             // how long that step had run
  int step_events = 0;                     // progress/phase events during that step
  double progress_rate = 0.0;              // step_events per second of the step
  std::optional<StackCapture> stacks;      // set when stacks were collected
  std::optional<double> load_start, load_end;     // 1-minute load average around the run
  int cpus = 0;                                    // online CPUs, to read the load against
  int gpu_sharers = 0;                             // set by the scheduler: CellResult::gpu_sharers
  double deadline_stretch = 1.0;                   // step deadlines × this (CPU cells: load / CPUs, ≥ 1)
  std::optional<std::uint64_t> peak_rss_bytes;      // the child's peak resident memory, as last sampled
  std::optional<std::uint64_t> memory_limit_bytes;  // what the machine (or cgroup) allows

  // A world_size > 1 cell (rank_group.h): one run per rank, in rank order; the
  // fields above are then the deciding rank's (the first to end on its own
  // with a failure, else rank 0). A rank killed because another one failed
  // is `stopped_with_group`, not cancelled by the user.
  std::vector<SupervisedRun> ranks;
  bool stopped_with_group = false;
};

// Spawns `launch`, watches it until it exits or a deadline fires, reaps its
// whole process group. Never throws for a child's failure to start: that is
// recorded in launch_error.
SupervisedRun supervise(const ChildLaunch& launch, const WatchdogSpec& spec, const Hooks& hooks = {},
                        const SupervisorOptions& options = {});

}  // namespace harness::supervisor
