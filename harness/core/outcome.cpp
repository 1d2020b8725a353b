#include "harness/core/outcome.h"

#include "harness/core/enum_names.h"

namespace harness {
namespace {
constexpr EnumName<Outcome> kOutcomes[] = {
    {Outcome::pass, "pass"},   {Outcome::hang, "hang"},   {Outcome::step_timeout, "step_timeout"},
    {Outcome::slow_step, "slow_step"}, {Outcome::crash, "crash"}, {Outcome::error, "error"},
    {Outcome::fail, "fail"},   {Outcome::skip, "skip"}};
constexpr EnumName<Severity> kSeverities[] = {
    {Severity::info, "info"}, {Severity::warning, "warning"}, {Severity::blocking, "blocking"}};
}  // namespace

std::string_view to_string(Outcome o) { return name_in(kOutcomes, o, "unknown"); }
std::optional<Outcome> outcome_from_string(std::string_view s) { return value_in(kOutcomes, s); }

int severity_rank(Outcome o) {
  switch (o) {
    case Outcome::skip: return 0;
    case Outcome::pass: return 1;
    case Outcome::slow_step: return 2;
    case Outcome::fail: return 3;
    case Outcome::step_timeout: return 4;
    case Outcome::error: return 5;
    case Outcome::hang: return 6;
    case Outcome::crash: return 7;
  }
  return 0;
}

bool is_failure(Outcome o) { return o != Outcome::pass && o != Outcome::skip; }

std::string_view to_string(Severity s) { return name_in(kSeverities, s, "unknown"); }
std::optional<Severity> severity_from_string(std::string_view s) { return value_in(kSeverities, s); }

// The `decides` column of reason_table.h: an outcome's name, or `warning`. In a named
// namespace: in a unity build these short names would meet the other files' own.
namespace reason_decides {
constexpr std::optional<Outcome> hang = Outcome::hang, step_timeout = Outcome::step_timeout,
                                 slow_step = Outcome::slow_step, crash = Outcome::crash, error = Outcome::error,
                                 fail = Outcome::fail, skip = Outcome::skip, warning = std::nullopt;
}  // namespace reason_decides

const std::vector<ReasonInfo>& reason_table() {
#define HARNESS_REASON_ROW(code, decides, meaning, advice) ReasonInfo{#code, reason_decides::decides, meaning, advice},
  static const std::vector<ReasonInfo> kReasons{HARNESS_REASONS(HARNESS_REASON_ROW)};
#undef HARNESS_REASON_ROW
  return kReasons;
}

const ReasonInfo* find_reason(std::string_view code) {
  for (const ReasonInfo& r : reason_table())
    if (r.code == code) return &r;
  return nullptr;
}

}  // namespace harness
