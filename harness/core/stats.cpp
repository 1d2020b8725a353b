#include "harness/core/stats.h"

#include <algorithm>
#include <cmath>

namespace harness {

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mad_spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  // 1.4826 = 1/Φ⁻¹(3/4): makes the MAD a consistent estimator of σ.
  return 1.4826 * median(std::move(dev));
}

double relative_spread(const std::vector<double>& v) {
  const double mid = v.size() >= 3 ? median(v) : 0.0;
  return mid > 0 ? mad_spread(v) / mid : 0.0;
}

Trend theil_sen(const std::vector<double>& y) {
  Trend t;
  const size_t n = y.size();
  std::vector<double> slopes;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) slopes.push_back((y[j] - y[i]) / double(j - i));
  t.slope = median(slopes);
  if (n < 2) return t;
  // The line's level: the median of y_i − slope·i; the scatter around it.
  std::vector<double> level, resid;
  for (size_t i = 0; i < n; ++i) level.push_back(y[i] - t.slope * double(i));
  t.intercept = median(level);
  for (size_t i = 0; i < n; ++i) resid.push_back(y[i] - t.at(double(i)));
  t.spread = mad_spread(resid);
  return t;
}

std::vector<double> warm_step_ms(const CellResult& c) {
  std::vector<double> ms;
  for (size_t i = 1; i < c.steps.size(); ++i) ms.push_back(c.steps[i].step_ms);
  return ms;
}

}  // namespace harness
