#include "harness/report/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/report/text_format.h"

namespace harness {

namespace {
// Geometry in SVG user units; the legend lives below the plot, one row per series.
constexpr double kWidth = 760, kPlotHeight = 420;
constexpr double kLeft = 70, kRight = 30, kTop = 40, kBottom = 50;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kPlotHeight - kTop - kBottom;
constexpr double kLegendRow = 18;
// Wide enough for a 12 px sans-serif character (digits and most letters are
// narrower): a legend sized with it is never cut at the right edge.
constexpr double kCharWidth = 7.5;
// Dash patterns cycle with the colours at another period, so that series far
// apart in the list still differ, and two lines drawn on top of each other show
// both patterns.
constexpr const char* kDashes[] = {"", "8 4", "2 3", "10 3 2 3", "4 4", "1 4"};
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

std::vector<double> nice_ticks(double lo, double hi, int target, bool integer) {
  double raw = (hi - lo) / std::max(1, target);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) { step = m * mag; break; }
  if (integer) step = std::max(1.0, std::round(step));
  // Integer multiples of the step, so ticks never accumulate rounding error.
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; ++k) ticks.push_back(k * step);
  if (ticks.size() < 2) ticks.push_back((last + 1) * step);
  return ticks;
}

namespace {

struct Frame {
  Range xr, yr;
  double px(double x) const { return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * kPlotW; }
  double py(double y) const { return kTop + (1 - (y - yr.lo) / (yr.hi - yr.lo)) * kPlotH; }
};

// The earlier series with exactly these points, or -1.
int identical_to(const LineChart& chart, size_t i) {
  const auto& pts = chart.series[i].points;
  for (size_t j = 0; j < i; ++j) {
    const auto& other = chart.series[j].points;
    if (other.size() != pts.size() || pts.empty()) continue;
    bool same = true;
    for (size_t k = 0; k < pts.size() && same; ++k)
      same = other[k].first == pts[k].first &&
             (other[k].second == pts[k].second || (std::isnan(other[k].second) && std::isnan(pts[k].second)));
    if (same) return static_cast<int>(j);
  }
  return -1;
}

std::string axes(const LineChart& chart, const Frame& f, const std::vector<double>& xt, const std::vector<double>& yt) {
  std::string s;
  for (double t : yt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e0e0e0\"/>\n"
                     "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
                     num(kLeft), num(f.py(t)), num(kLeft + kPlotW), num(kLeft - 6), num(f.py(t) + 4), tick_label(t));
  for (double t : xt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n"
                     "<text class=\"x-tick\" x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     num(f.px(t)), num(kTop + kPlotH), num(kTop + kPlotH + 5), num(kTop + kPlotH + 18), tick_label(t));
  s += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" fill=\"none\" stroke=\"#333\"/>\n", num(kLeft), num(kTop),
                   num(kTop + kPlotH), num(kLeft + kPlotW));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(kLeft + kPlotW / 2),
                   num(kPlotHeight - 10), xml_escape(chart.x_label));
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   num(kTop + kPlotH / 2), xml_escape(chart.y_label));
  return s;
}

// A polyline per run of finite points; × for each non-finite one; the failure line.
std::string series_marks(const ChartSeries& series, size_t i, const Frame& f, bool& any_non_finite) {
  const char* color = kColors[i % std::size(kColors)];
  const std::string dash = kDashes[i % std::size(kDashes)];
  const std::string dash_attr = dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"";
  std::string s;
  std::vector<std::pair<double, double>> run;
  auto flush = [&] {
    if (run.size() == 1)
      s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>\n", num(f.px(run[0].first)),
                       num(f.py(run[0].second)), color);
    if (run.size() > 1) {
      s += "<polyline fill=\"none\" stroke-width=\"1.8\" stroke=\"" + std::string(color) + "\"" + dash_attr + " points=\"";
      for (size_t k = 0; k < run.size(); ++k) s += (k ? " " : "") + num(f.px(run[k].first)) + "," + num(f.py(run[k].second));
      s += "\"/>\n";
    }
    run.clear();
  };
  for (auto& [x, y] : series.points) {
    if (std::isfinite(y)) { run.emplace_back(x, y); continue; }
    flush();
    any_non_finite = true;
    const double cx = f.px(x), cy = kTop + 6;
    s += fmt::format("<path class=\"non-finite\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\" "
                     "stroke-width=\"2\"><title>{5}: non-finite at x={6}</title></path>\n",
                     num(cx - 4), num(cy - 4), num(cx + 4), num(cy + 4), color, xml_escape(series.name), tick_label(x));
  }
  flush();
  if (series.failed_at) {
    const double x = f.px(*series.failed_at);
    s += fmt::format("<g class=\"failure-marker\" data-x=\"{0}\"><line x1=\"{1}\" y1=\"{2}\" x2=\"{1}\" y2=\"{3}\" "
                     "stroke=\"{4}\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/><text x=\"{5}\" y=\"{6}\" "
                     "fill=\"{4}\">{7} at {0}</text><title>{8}: {7} at x={0}</title></g>\n",
                     tick_label(*series.failed_at), num(x), num(kTop), num(kTop + kPlotH), color, num(x + 3),
                     num(kTop + 14 + 12 * static_cast<double>(i % 4)), xml_escape(series.failure), xml_escape(series.name));
  }
  return s;
}

// One row per series below the plot: the colour and dash of its line, its full name.
std::string legend(const LineChart& chart) {
  std::string s;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double y = kPlotHeight + kLegendRow * static_cast<double>(i) + 4;
    const std::string dash = kDashes[i % std::size(kDashes)];
    std::string name = chart.series[i].name;
    if (int j = identical_to(chart, i); j >= 0) name += " (identical to " + chart.series[static_cast<size_t>(j)].name + ": drawn on top of it)";
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>\n"
                     "<text class=\"legend\" x=\"{5}\" y=\"{6}\">{7}</text>\n",
                     num(kLeft), num(y), num(kLeft + 28), kColors[i % std::size(kColors)],
                     dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"", num(kLeft + 36), num(y + 4),
                     xml_escape(name));
  }
  return s;
}

double legend_width(const LineChart& chart) {
  size_t longest = 0;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    size_t n = chart.series[i].name.size();
    if (int j = identical_to(chart, i); j >= 0) n += chart.series[static_cast<size_t>(j)].name.size() + 40;
    longest = std::max(longest, n);
  }
  return kLeft + 36 + kCharWidth * static_cast<double>(longest) + 10;
}

}  // namespace

std::string render_svg(const LineChart& chart) {
  Frame f;
  for (auto& s : chart.series) {
    for (auto& [x, y] : s.points) { f.xr.add(x); f.yr.add(y); }
    if (s.failed_at) f.xr.add(*s.failed_at);
  }
  f.xr.settle();
  f.yr.settle();
  auto xt = nice_ticks(f.xr.lo, f.xr.hi, 5, chart.integer_x), yt = nice_ticks(f.yr.lo, f.yr.hi);
  f.xr.lo = xt.front(); f.xr.hi = xt.back(); f.yr.lo = yt.front(); f.yr.hi = yt.back();
  const double width = std::max(kWidth, legend_width(chart));
  const double height = kPlotHeight + kLegendRow * static_cast<double>(chart.series.size() + 1) + 8;

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      num(width), num(height));
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", num(width), num(height));
  s += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n", kLeft, xml_escape(chart.title));
  s += axes(chart, f, xt, yt);
  bool any_non_finite = false;
  for (size_t i = 0; i < chart.series.size(); ++i) s += series_marks(chart.series[i], i, f, any_non_finite);
  s += legend(chart);
  if (any_non_finite)
    s += fmt::format("<text x=\"{}\" y=\"{}\">× = non-finite value</text>\n", num(kLeft),
                     num(kPlotHeight + kLegendRow * static_cast<double>(chart.series.size()) + 8));
  return s + "</svg>\n";
}

}  // namespace harness
