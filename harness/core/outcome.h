#pragma once
// Outcomes and reason codes: the fixed vocabulary every stage (supervisor,
// analysis, reports, self-test) speaks. DESIGN.md §4 defines the outcomes.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/reason_table.h"

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

// Reason codes (reason_table.h holds each with its meaning and advice). A
// cell's `reason` is the code of the finding that decided its outcome.
namespace reason {
#define HARNESS_REASON_CONSTANT(code, decides, meaning, advice) inline constexpr std::string_view code = #code;
HARNESS_REASONS(HARNESS_REASON_CONSTANT)
#undef HARNESS_REASON_CONSTANT
}  // namespace reason

// One row of the reason table. `decides`: the outcome a blocking finding with
// this code gives its cell; empty for a warning (it never decides an outcome
// on its own, it makes a GO conditional).
struct ReasonInfo {
  std::string_view code;
  std::optional<Outcome> decides;
  std::string_view meaning;
  std::string_view advice;  // the next action the report gives
};
const std::vector<ReasonInfo>& reason_table();
const ReasonInfo* find_reason(std::string_view code);

}  // namespace harness
