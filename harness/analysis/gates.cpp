#include "harness/analysis/gates.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace harness {
using nlohmann::json;

namespace {

std::string num(double v) { return fmt::format("{:g}", v); }

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

// The typical step must stay under the limit: the median warm step, judged
// beyond the noise the cell's own steps carry (scaled MAD). One step over the
// limit is a timing outlier, which the slow-step check judges with its floors
// and a confirming re-run; a gate that flips on one noisy step is a false alarm.
GateCheck max_step_ms(const CellResult& c, double required) {
  GateCheck g{"max_step_ms", c.id, "≤ " + num(required) + " ms (median step)", "n/a", false};
  if (c.step_noise && c.step_noise->steps > 0) {
    const auto& n = *c.step_noise;
    g.measured = fmt::format("{:.1f} ms ± {:.1f} (median ± scaled MAD of {} steps", n.median_ms, n.mad_ms, n.steps);
    if (c.metrics.step_ms_max) g.measured += fmt::format("; slowest {:.1f} ms", *c.metrics.step_ms_max);
    g.measured += ")";
    g.met = !median_over_limit(n, required);
  } else if (c.metrics.step_ms_median) {
    g.measured = fmt::format("{:.1f} ms (median step)", *c.metrics.step_ms_median);
    g.met = *c.metrics.step_ms_median <= required;
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

// Every branch's mean gate share, in every layer, within the limits: the
// extremes over layers of the gates probe's table (CellResult::gate_stats).
GateCheck branch_share(const CellResult& c, bool is_min, double required) {
  GateCheck g{is_min ? "min_branch_share" : "max_branch_share", c.id,
              (is_min ? "every branch ≥ " : "every branch ≤ ") + num(required), "n/a (no gate statistics)", false};
  std::string worst_name;
  double worst = is_min ? INFINITY : -INFINITY;
  int worst_layer = -1;
  if (!c.gate_stats) return g;
  for (auto& [name, share] : branch_shares(*c.gate_stats)) {
    const double x = is_min ? share.min : share.max;
    if (is_min ? x < worst : x > worst) worst = x, worst_name = name, worst_layer = is_min ? share.min_layer : share.max_layer;
  }
  if (!worst_name.empty()) {
    g.measured = fmt::format("{} {:.3f} (layer {})", worst_name, worst, worst_layer);
    g.met = is_min ? worst >= required : worst <= required;
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

// An absolute timing limit missed on a busy machine, or on a GPU another cell
// computed on at the same time, is not judged: the measurement is the
// machine's (results.h machine_busy, gpu_shared).
GateCheck unless_busy(GateCheck g, const CellResult& c) {
  if (g.met) return g;
  if (gpu_shared(c.gpu_sharers)) {
    g.judged = false;
    g.measured += fmt::format(" — not judged: GPU shared with up to {} other cell(s)", c.gpu_sharers - 1);
  } else if (c.load && machine_busy(*c.load)) {
    g.judged = false;
    g.measured += fmt::format(" — not judged: machine busy (load {:.1f} on {} CPUs)",
                              std::max(c.load->start, c.load->end), c.load->cpus);
  }
  return g;
}

std::vector<GateCheck> check_gates(const CellResult& c) {
  std::vector<GateCheck> out;
  if (!c.gates || c.outcome == Outcome::skip) return out;
  const GateSpec& spec = *c.gates;
  if (spec.min_tok_s) out.push_back(unless_busy(min_tok_s(c, *spec.min_tok_s), c));
  if (spec.max_step_ms) out.push_back(unless_busy(max_step_ms(c, *spec.max_step_ms), c));
  if (spec.require_finite) out.push_back(require_finite(c));
  if (spec.require_loss_falls) out.push_back(require_loss_falls(c));
  if (spec.min_branch_share) out.push_back(branch_share(c, true, *spec.min_branch_share));
  if (spec.max_branch_share) out.push_back(branch_share(c, false, *spec.max_branch_share));
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
