#include "harness/report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/report/text_format.h"

namespace harness {

namespace {
// Geometry in SVG user units; the legend lives in the right margin.
constexpr double kWidth = 760, kHeight = 420;
constexpr double kLeft = 70, kRight = 220, kTop = 40, kBottom = 50;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
// Tableau 10: distinguishable, and readable by most colour-blind readers.
constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) { if (std::isfinite(v)) { lo = std::min(lo, v); hi = std::max(hi, v); } }
  // An empty or zero-width range still needs an axis.
  void settle() {
    if (lo > hi) { lo = 0; hi = 1; }
    if (lo == hi) { double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5; lo -= pad; hi += pad; }
  }
};

std::string num(double v) { return fmt::format("{:.1f}", v); }
std::string tick_label(double v) { return fmt::format("{:g}", std::fabs(v) < 1e-12 ? 0.0 : v); }
}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  double raw = (hi - lo) / std::max(1, target);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) { step = m * mag; break; }
  // Integer multiples of the step, so ticks never accumulate rounding error.
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; ++k) ticks.push_back(k * step);
  if (ticks.size() < 2) ticks.push_back((last + 1) * step);
  return ticks;
}

std::string render_svg(const LineChart& chart) {
  Range xr, yr;
  for (auto& s : chart.series)
    for (auto& [x, y] : s.points) { xr.add(x); yr.add(y); }
  xr.settle();
  yr.settle();
  auto xt = nice_ticks(xr.lo, xr.hi), yt = nice_ticks(yr.lo, yr.hi);
  xr.lo = xt.front(); xr.hi = xt.back(); yr.lo = yt.front(); yr.hi = yt.back();
  auto px = [&](double x) { return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * kPlotW; };
  auto py = [&](double y) { return kTop + (1 - (y - yr.lo) / (yr.hi - yr.lo)) * kPlotH; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight);
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", kWidth, kHeight);
  s += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n", kLeft, xml_escape(chart.title));
  // Axes, grid and ticks.
  for (double t : yt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e0e0e0\"/>\n"
                     "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
                     num(kLeft), num(py(t)), num(kLeft + kPlotW), num(kLeft - 6), num(py(t) + 4), tick_label(t));
  for (double t : xt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n"
                     "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     num(px(t)), num(kTop + kPlotH), num(kTop + kPlotH + 5), num(kTop + kPlotH + 18), tick_label(t));
  s += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" fill=\"none\" stroke=\"#333\"/>\n", num(kLeft), num(kTop),
                   num(kTop + kPlotH), num(kLeft + kPlotW));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(kLeft + kPlotW / 2),
                   num(kHeight - 10), xml_escape(chart.x_label));
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   num(kTop + kPlotH / 2), xml_escape(chart.y_label));
  // Series: a polyline per run of finite points; × for each non-finite one.
  bool any_non_finite = false;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      if (run.size() == 1)
        s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>\n", num(px(run[0].first)),
                         num(py(run[0].second)), color);
      if (run.size() > 1) {
        s += "<polyline fill=\"none\" stroke-width=\"1.8\" stroke=\"" + std::string(color) + "\" points=\"";
        for (size_t k = 0; k < run.size(); ++k)
          s += (k ? " " : "") + num(px(run[k].first)) + "," + num(py(run[k].second));
        s += "\"/>\n";
      }
      run.clear();
    };
    for (auto& [x, y] : chart.series[i].points) {
      if (std::isfinite(y)) { run.emplace_back(x, y); continue; }
      flush();
      any_non_finite = true;
      double cx = px(x), cy = kTop + 6;
      s += fmt::format("<path class=\"non-finite\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\" "
                       "stroke-width=\"2\"><title>{5}: non-finite at x={6}</title></path>\n",
                       num(cx - 4), num(cy - 4), num(cx + 4), num(cy + 4), color,
                       xml_escape(chart.series[i].name), tick_label(x));
    }
    flush();
    double ly = kTop + 10 + 18 * static_cast<double>(i);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"4\" fill=\"{}\"/>\n"
                     "<text x=\"{}\" y=\"{}\">{}</text>\n",
                     num(kLeft + kPlotW + 14), num(ly - 4), color, num(kLeft + kPlotW + 32), num(ly + 1),
                     xml_escape(chart.series[i].name));
  }
  if (any_non_finite)
    s += fmt::format("<text x=\"{}\" y=\"{}\">× = non-finite value</text>\n", num(kLeft + kPlotW + 14),
                     num(kTop + 10 + 18 * static_cast<double>(chart.series.size()) + 8));
  return s + "</svg>\n";
}

}  // namespace harness
