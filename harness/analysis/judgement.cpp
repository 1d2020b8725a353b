#include "harness/analysis/judgement.h"

#include <map>

#include <fmt/format.h>

#include "harness/analysis/gates.h"

namespace harness {

namespace {
const Finding* deciding_finding(const CellResult& c, const std::string& reason) {
  for (auto& f : c.findings)
    if (f.severity == Severity::blocking && f.code == reason) return &f;
  for (auto& f : c.findings)
    if (f.code == reason) return &f;
  for (auto& f : c.findings)
    if (f.severity == Severity::blocking) return &f;
  return nullptr;
}
}  // namespace

Judgement judge(const CellResult& c) {
  Judgement j;
  if (c.outcome == Outcome::skip) {
    j.kind = Judgement::Kind::skip;
    j.outcome = "skip";
    j.reason = c.reason.value_or("skip");
    j.deciding = deciding_finding(c, j.reason);
    return j;
  }
  if (is_failure(c.outcome)) {
    j.kind = Judgement::Kind::fail;
    j.outcome = std::string(to_string(c.outcome));
    j.reason = c.reason.value_or(j.outcome);
    j.deciding = deciding_finding(c, j.reason);
    return j;
  }
  for (auto& g : check_gates(c)) {
    if (g.met || !g.judged) continue;
    j.kind = Judgement::Kind::fail;
    j.outcome = "fail";
    j.reason = std::string(gate_reason(g.gate));
    j.deciding = deciding_finding(c, j.reason);
    return j;
  }
  j.kind = Judgement::Kind::pass;
  j.outcome = "pass";
  return j;
}

bool is_timing_reason(const std::string& r) {
  return r == reason::slow_step || r == reason::slow_step_growth || r == reason::gate_max_step_ms ||
         r == reason::gate_min_tok_s;
}

bool fails_on_timing_only(const CellResult& c) {
  const Judgement j = judge(c);
  if (j.kind != Judgement::Kind::fail || !is_timing_reason(j.reason)) return false;
  for (auto& f : c.findings)
    if (f.severity == Severity::blocking && !is_timing_reason(f.code)) return false;
  return true;
}

std::string failure_noun(const std::string& outcome, const std::string& reason) {
  static const std::map<std::string, std::string> kOutcomeNouns{
      {"hang", "hang"},   {"step_timeout", "step timeout"}, {"slow_step", "slow step"},
      {"crash", "crash"}, {"error", "error"}};
  // `fail` says only that a diagnosis fired; the reason names which.
  static const std::map<std::string, std::string> kReasonNouns{
      {"non_finite", "non-finite values"},
      {"routing_mismatch", "routing mismatch"},
      {"parity", "parity mismatch"},
      {"causality", "causality violation"},
      {"invariant", "NSA invariant violation"},
      {"dead_params", "dead parameters"},
      {"loss_not_falling", "loss that does not fall"},
      {"gate_min_tok_s", "throughput below the gate"},
      {"gate_max_step_ms", "step time above the gate"},
      {"gate_branch_share", "branch share outside the gate"}};
  if (outcome != "fail") {
    auto it = kOutcomeNouns.find(outcome);
    return it != kOutcomeNouns.end() ? it->second : outcome;
  }
  auto it = kReasonNouns.find(reason);
  return it != kReasonNouns.end() ? it->second : "failure";
}

std::string describe_failure(const Judgement& j) {
  std::string s = fmt::format("the {} ({})", failure_noun(j.outcome, j.reason), j.reason);
  if (j.deciding && j.deciding->step) s += fmt::format(" at step {}", *j.deciding->step);
  return s;
}

}  // namespace harness
