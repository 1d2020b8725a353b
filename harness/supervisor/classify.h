#pragma once
// From what a supervised run showed (exit status, events, stderr, stacks) to a
// CellResult: outcome, reason code and findings with evidence (DESIGN.md §4).
// Decides only from the run itself: never from which faults the cell enabled
// or what the scenario is called, so a bug nobody planted is caught the same way.
//
// Order of decision:
//   launch failed                         → crash launch_failed
//   watchdog kill: stall / first step     → hang stall | first_step_timeout
//                  step / wall cap        → step_timeout
//                  cancelled              → skip cancelled
//   killed by a signal                    → crash cuda_* when CUDA text says so; error when an uncaught
//                                           exception aborted (SIGABRT + exception text); else crash signal
//   exit ≠ 0                              → crash cuda_* | error autograd_inplace | index_out_of_range |
//                                           exception | crash protocol (only garbage) | crash exit_nonzero
//   exit 0                                → crash protocol (no events, or no `done`) | error (error event)
//                                           | skip (no_cuda finding) | fail (first blocking finding by step)
//                                           | slow_step | pass
#include <string_view>

#include "harness/core/cell_spec.h"
#include "harness/core/results.h"
#include "harness/supervisor/watchdog.h"

namespace harness::supervisor {

// Reason codes the supervisor needs beyond outcome.h's vocabulary.
inline constexpr std::string_view kReasonLaunchFailed = "launch_failed";
inline constexpr std::string_view kReasonCancelled = "cancelled";

// How much of stderr.log is searched for error text: the end is where the
// fatal message is; a chatty child must not make us read gigabytes.
inline constexpr size_t kStderrTailBytes = 64u << 10;

CellResult classify(const CellSpec& spec, const SupervisedRun& run);

// expect = {outcome, reason?}: met when the outcome matches and, if a reason
// is given, the reason too.
// With no deciding reason (a pass), an expected reason is met by a finding (a warning) with that code.
bool expectation_met(const nlohmann::json& expect, Outcome outcome, const std::optional<std::string>& reason,
                     const std::vector<Finding>& findings = {});

}  // namespace harness::supervisor
