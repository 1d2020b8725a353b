#pragma once
// Outcomes and reason codes: the fixed vocabulary every stage (supervisor,
// analysis, reports, self-test) speaks. DESIGN.md §4 defines the outcomes.
#include <optional>
#include <string>
#include <string_view>

namespace harness {

enum class Outcome { pass, hang, step_timeout, slow_step, crash, error, fail, skip };

std::string_view to_string(Outcome o);
std::optional<Outcome> outcome_from_string(std::string_view s);
// Outcomes ordered by how bad they are, used when several apply to one cell
// (e.g. a slow step in a cell that later crashed is a crash).
int severity_rank(Outcome o);
bool is_failure(Outcome o);  // anything but pass and skip

enum class Severity { info, warning, blocking };
std::string_view to_string(Severity s);
std::optional<Severity> severity_from_string(std::string_view s);

// Reason codes. A cell's `reason` is the code of the finding that decided its
// outcome. Codes are stable strings: scenarios' `expect:` and JSON consumers use them.
namespace reason {
// hang
inline constexpr std::string_view stall = "stall";                          // no event for stall_timeout_s
// step_timeout
inline constexpr std::string_view first_step_timeout = "first_step_timeout";  // no first step_end in time, still progressing
inline constexpr std::string_view step_timeout = "step_timeout";            // events flow, step does not end
// slow_step
inline constexpr std::string_view slow_host_syncs = "slow_host_syncs";      // slow, and the step is full of host syncs
inline constexpr std::string_view slow_step_growth = "slow_step_growth";    // step time grows step over step
inline constexpr std::string_view slow_step = "slow_step";                  // over max_step_ms or k× median, cause unknown
// crash
inline constexpr std::string_view cuda_illegal_address = "cuda_illegal_address";
inline constexpr std::string_view cuda_error = "cuda_error";
inline constexpr std::string_view sanitizer_report = "sanitizer_report";    // ASan/UBSan/LSan stopped an instrumented child
inline constexpr std::string_view out_of_memory = "out_of_memory";          // SIGKILLed with host memory near its limit
inline constexpr std::string_view signal = "signal";                        // killed by a signal (SIGSEGV, SIGABRT, …)
inline constexpr std::string_view exit_nonzero = "exit_nonzero";            // exited non-zero without an error event
inline constexpr std::string_view protocol = "protocol";                    // child wrote no usable events
// error
inline constexpr std::string_view autograd_inplace = "autograd_inplace";    // "modified by an inplace operation"
inline constexpr std::string_view index_out_of_range = "index_out_of_range";
inline constexpr std::string_view exception = "exception";
// fail
inline constexpr std::string_view non_finite = "non_finite";
inline constexpr std::string_view routing_mismatch = "routing_mismatch";
inline constexpr std::string_view parity = "parity";
inline constexpr std::string_view causality = "causality";
inline constexpr std::string_view invariant = "invariant";
inline constexpr std::string_view dead_params = "dead_params";
inline constexpr std::string_view loss_not_falling = "loss_not_falling";
inline constexpr std::string_view gate_min_tok_s = "gate_min_tok_s";
inline constexpr std::string_view gate_max_step_ms = "gate_max_step_ms";
inline constexpr std::string_view gate_branch_share = "gate_branch_share";
// warnings (never decide an outcome on their own; make a GO conditional)
inline constexpr std::string_view gates_constant = "gates_constant";
inline constexpr std::string_view gates_saturated = "gates_saturated";
inline constexpr std::string_view adamw_eps_underflow = "adamw_eps_underflow";
inline constexpr std::string_view loss_scale_skips = "loss_scale_skips";
inline constexpr std::string_view memory_growth = "memory_growth";
inline constexpr std::string_view host_syncs = "host_syncs";
inline constexpr std::string_view flag_no_effect = "flag_no_effect";
inline constexpr std::string_view fallback = "fallback";
// distributed (world_size > 1), from the ranks' flight records side by side
inline constexpr std::string_view collective_mismatch = "collective_mismatch";  // hang: a rank left a collective out
inline constexpr std::string_view collective_stall = "collective_stall";        // hang: a rank never reached one
inline constexpr std::string_view rank_desync = "rank_desync";                  // fail: parameters differ across ranks
inline constexpr std::string_view straggler = "straggler";                      // warning: one rank's work is slower
// skip
inline constexpr std::string_view no_cuda = "no_cuda";
inline constexpr std::string_view no_backend = "no_backend";  // world_size > 1 without this build's Gloo/NCCL
}  // namespace reason

}  // namespace harness
