#pragma once
// The findings that decide a cell's outcome from how its process ended: a
// watchdog kill (with the stacks and the phase in progress), a signal, a CUDA
// error or exception, a protocol violation. classify() picks which applies.
#include <string>

#include "harness/core/results.h"
#include "harness/supervisor/error_text.h"
#include "harness/supervisor/watchdog.h"

namespace harness::supervisor {

// hang (stall, first_step_timeout) or step_timeout (step_timeout, wall cap).
Finding watchdog_finding(const SupervisedRun& run);
// crash signal: names the signal, carries the stderr tail and any error text.
Finding signal_finding(const SupervisedRun& run, const std::optional<ErrorDiagnosis>& text,
                       const std::string& stderr_tail);
// crash cuda_* / error autograd_inplace | index_out_of_range | exception.
Finding error_finding(const SupervisedRun& run, const ErrorDiagnosis& d, const std::string& stderr_tail);
// crash with `code` (exit_nonzero, protocol, launch_failed, cancelled) and a title.
Finding plain_finding(const SupervisedRun& run, std::string_view code, std::string title, std::string detail,
                      const std::string& stderr_tail);

// The last lines of `text` (evidence stays readable in a report).
std::string last_lines(const std::string& text, size_t n);

}  // namespace harness::supervisor
