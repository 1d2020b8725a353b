#include "harness/analysis/repeat_agreement.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>

#include "harness/analysis/axis_pairs.h"

namespace harness {
namespace {

std::string settings_csv(const AxisValues& axes) {
  std::string s;
  for (const auto& [k, v] : axes) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

// The losses of one run by step number.
std::map<int, double> losses(const CellResult& c) {
  std::map<int, double> out;
  for (const auto& st : c.steps) out[st.step] = st.loss;
  return out;
}

// Same bits: equal values, and one NaN payload equal to itself.
bool same_bits(double a, double b) {
  std::uint64_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

double relative_difference(double ref, double x) {
  if (!std::isfinite(ref) || !std::isfinite(x)) return std::numeric_limits<double>::infinity();
  const double d = std::abs(x - ref);
  return ref != 0 ? d / std::abs(ref) : d;
}

}  // namespace

std::vector<RepeatAgreement> repeat_agreements(const std::vector<CellResult>& cells) {
  std::vector<RepeatAgreement> out;
  std::vector<AxisValues> seen;
  for (const auto& c : cells) {
    if (!axis_value(c, "repeat")) continue;
    const AxisValues rest = without_axis(c.axes, "repeat");
    if (std::find(seen.begin(), seen.end(), rest) != seen.end()) continue;
    seen.push_back(rest);
    std::vector<const CellResult*> runs;
    for (const auto& other : cells)
      if (axis_value(other, "repeat") && without_axis(other.axes, "repeat") == rest && !other.steps.empty())
        runs.push_back(&other);
    if (runs.size() < 2) continue;
    RepeatAgreement a;
    a.settings = settings_csv(rest);
    std::vector<std::map<int, double>> by_step;
    for (const CellResult* r : runs) a.cells.push_back(r->id), by_step.push_back(losses(*r));
    for (const auto& [step, first] : by_step.front()) {
      bool everywhere = true;
      for (size_t i = 1; i < by_step.size() && everywhere; ++i) everywhere = by_step[i].count(step) > 0;
      if (!everywhere) continue;
      ++a.steps_compared;
      if (a.first_difference_step) continue;
      double worst = 0;
      bool differs = false;
      for (size_t i = 1; i < by_step.size(); ++i) {
        const double x = by_step[i].at(step);
        if (same_bits(first, x)) continue;
        differs = true;
        worst = std::max(worst, relative_difference(first, x));
      }
      if (differs) a.first_difference_step = step, a.first_difference = worst;
    }
    out.push_back(std::move(a));
  }
  return out;
}

void to_json(nlohmann::json& j, const RepeatAgreement& a) {
  j = {{"settings", a.settings},
       {"cells", a.cells},
       {"steps_compared", a.steps_compared},
       {"first_difference_step", a.first_difference_step ? nlohmann::json(*a.first_difference_step) : nlohmann::json()},
       {"first_difference", std::isfinite(a.first_difference) ? nlohmann::json(a.first_difference) : nlohmann::json()}};
}

}  // namespace harness
