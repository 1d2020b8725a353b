#pragma once
// Hand-built cells for the analysis and report tests: a CellResult from its
// axes and outcome, with the id built as the matrix builds it ("a=1,b=2").
#include <cmath>
#include <optional>
#include <string>

#include "harness/core/results.h"

namespace harness::testing {

inline std::string id_of(const AxisValues& axes) {
  std::string id;
  for (auto& [k, v] : axes) id += (id.empty() ? "" : ",") + k + "=" + v;
  return id.empty() ? "default" : id;
}

inline CellResult make_cell(AxisValues axes, Outcome outcome, std::optional<std::string> reason = std::nullopt,
                            std::optional<int> step = std::nullopt, std::string location = "") {
  CellResult c;
  c.axes = std::move(axes);
  c.id = id_of(c.axes);
  c.outcome = outcome;
  c.reason = reason;
  c.steps_planned = 8;
  c.steps_completed = outcome == Outcome::pass ? 8 : step.value_or(0);
  if (reason && outcome != Outcome::pass) {
    Finding f;
    f.code = *reason;
    f.severity = outcome == Outcome::skip ? Severity::info : Severity::blocking;
    f.title = *reason + " in " + c.id;
    f.step = step;
    f.location = location;
    c.findings.push_back(f);
  }
  return c;
}

inline Finding finding(std::string code, Severity severity, std::string title, std::optional<int> step = std::nullopt,
                       std::string location = "") {
  Finding f;
  f.code = std::move(code);
  f.severity = severity;
  f.title = std::move(title);
  f.step = step;
  f.location = std::move(location);
  return f;
}

inline Finding warning(std::string code, std::string title, std::optional<int> step = std::nullopt) {
  return finding(std::move(code), Severity::warning, std::move(title), step);
}

// Gate limits written as in results.json ({"min_tok_s": 300}); a key left out is
// not checked (require_finite included, unlike a scenario's default).
inline GateSpec gates_from(const nlohmann::json& j) {
  GateSpec g = j.get<GateSpec>();
  g.require_finite = j.value("require_finite", false);
  return g;
}

// Steps with the given times (ms) and a loss that falls by 0.5 per step from 5.5.
inline void add_steps(CellResult& c, std::initializer_list<double> ms) {
  int i = 1;
  for (double t : ms) {
    StepRecord s;
    s.step = i;
    s.loss = 5.5 - 0.5 * (i - 1);
    s.step_ms = t;
    s.tok_s = t > 0 ? 256.0 * 1000.0 / t : 0.0;
    c.steps.push_back(s);
    ++i;
  }
}

}  // namespace harness::testing
