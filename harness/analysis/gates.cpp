#include "harness/analysis/gates.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace harness {
using nlohmann::json;

namespace {

std::string num(double v) { return fmt::format("{:g}", v); }

const json* spec_of(const CellResult& c) {
  auto it = c.extra.find("gates_spec");
  if (it == c.extra.end() || !it->is_object()) return nullptr;
  return &*it;
}

bool has_number(const json& spec, const char* key) {
  return spec.contains(key) && spec.at(key).is_number();
}

const Finding* finding_with(const CellResult& c, std::string_view code) {
  for (auto& f : c.findings)
    if (f.code == code) return &f;
  return nullptr;
}

GateCheck min_tok_s(const CellResult& c, double required) {
  GateCheck g{"min_tok_s", c.id, "≥ " + num(required) + " tok/s", "n/a", false};
  if (c.metrics.tok_s) {
    g.measured = fmt::format("{:.1f} tok/s", *c.metrics.tok_s);
    g.met = *c.metrics.tok_s >= required;
  }
  return g;
}

// Every step must stay under the limit, so the slowest step is what is measured.
GateCheck max_step_ms(const CellResult& c, double required) {
  GateCheck g{"max_step_ms", c.id, "≤ " + num(required) + " ms", "n/a", false};
  std::optional<double> slowest = c.metrics.step_ms_max;
  if (!slowest) {
    for (auto& s : c.steps)
      if (std::isfinite(s.step_ms)) slowest = std::max(slowest.value_or(s.step_ms), s.step_ms);
  }
  if (slowest) {
    g.measured = fmt::format("{:.1f} ms (slowest step)", *slowest);
    g.met = *slowest <= required;
  }
  return g;
}

GateCheck require_finite(const CellResult& c) {
  GateCheck g{"require_finite", c.id, "all losses finite", "n/a (no steps)", false};
  std::optional<int> first_bad;
  for (auto& s : c.steps)
    if (!std::isfinite(s.loss) && !s.skipped) { first_bad = s.step; break; }
  const Finding* nf = finding_with(c, "non_finite");
  if (nf && nf->step && (!first_bad || *nf->step < *first_bad)) first_bad = nf->step;
  if (first_bad) {
    g.measured = fmt::format("non-finite at step {}", *first_bad);
  } else if (nf) {
    g.measured = "non-finite (" + nf->title + ")";
  } else if (!c.steps.empty()) {
    g.measured = "all finite";
    g.met = true;
  }
  return g;
}

GateCheck require_loss_falls(const CellResult& c) {
  GateCheck g{"require_loss_falls", c.id, "last loss < first loss", "n/a", false};
  auto& m = c.metrics;
  if (m.first_loss && m.last_loss) {
    g.measured = fmt::format("{:.4f} → {:.4f}", *m.first_loss, *m.last_loss);
    g.met = std::isfinite(*m.first_loss) && std::isfinite(*m.last_loss) && *m.last_loss < *m.first_loss;
  }
  return g;
}

// Branch shares come from extra["branch_share"] = {cmp, slc, win} (mean gate
// share per branch over layers and tokens) when the gates probe recorded it.
GateCheck branch_share(const CellResult& c, bool is_min, double required) {
  GateCheck g{is_min ? "min_branch_share" : "max_branch_share", c.id,
              (is_min ? "every branch ≥ " : "every branch ≤ ") + num(required), "n/a", false};
  auto it = c.extra.find("branch_share");
  if (it != c.extra.end() && it->is_object() && !it->empty()) {
    std::string worst_name;
    double worst = is_min ? INFINITY : -INFINITY;
    for (auto& [name, v] : it->items()) {
      if (!v.is_number()) continue;
      double x = v.get<double>();
      if (is_min ? x < worst : x > worst) { worst = x; worst_name = name; }
    }
    if (!worst_name.empty()) {
      g.measured = fmt::format("{} {:.3f}", worst_name, worst);
      g.met = is_min ? worst >= required : worst <= required;
    }
  } else if (const Finding* f = finding_with(c, "gate_branch_share")) {
    g.measured = f->title;
  }
  return g;
}

}  // namespace

std::string_view gate_reason(std::string_view gate) {
  if (gate == "min_tok_s") return "gate_min_tok_s";
  if (gate == "max_step_ms") return "gate_max_step_ms";
  if (gate == "require_finite") return "non_finite";
  if (gate == "require_loss_falls") return "loss_not_falling";
  if (gate == "min_branch_share" || gate == "max_branch_share") return "gate_branch_share";
  return gate;
}

std::vector<GateCheck> check_gates(const CellResult& c) {
  std::vector<GateCheck> out;
  const json* spec = spec_of(c);
  if (!spec || c.outcome == Outcome::skip) return out;
  if (has_number(*spec, "min_tok_s")) out.push_back(min_tok_s(c, spec->at("min_tok_s").get<double>()));
  if (has_number(*spec, "max_step_ms")) out.push_back(max_step_ms(c, spec->at("max_step_ms").get<double>()));
  if (spec->value("require_finite", false)) out.push_back(require_finite(c));
  if (spec->value("require_loss_falls", false)) out.push_back(require_loss_falls(c));
  if (has_number(*spec, "min_branch_share"))
    out.push_back(branch_share(c, true, spec->at("min_branch_share").get<double>()));
  if (has_number(*spec, "max_branch_share"))
    out.push_back(branch_share(c, false, spec->at("max_branch_share").get<double>()));
  return out;
}

std::vector<GateCheck> check_gates(const std::vector<CellResult>& cells) {
  std::vector<GateCheck> out;
  for (auto& c : cells) {
    auto g = check_gates(c);
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

}  // namespace harness
