#include "harness/report/svg_chart.h"

#include <cmath>

#include <gtest/gtest.h>

#include "harness/report/xml_check.h"

namespace harness {
namespace {

size_t count(const std::vector<testing::XmlElement>& es, const std::string& name) {
  return static_cast<size_t>(std::count_if(es.begin(), es.end(), [&](auto& e) { return e.name == name; }));
}

TEST(NiceTicks, CoverTheRangeInRoundSteps) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(1, 8, 5), (std::vector<double>{0, 2, 4, 6, 8}));
  // raw step 3.41 / 5 = 0.68 rounds up to 1 (the next of 0.1 × {1, 2, 5, 10}).
  EXPECT_EQ(nice_ticks(2.31, 5.72, 5), (std::vector<double>{2, 3, 4, 5, 6}));
  auto t = nice_ticks(0.0012, 0.0047, 5);  // step 0.001: multiples, not accumulated sums
  ASSERT_EQ(t.size(), 5u);
  EXPECT_DOUBLE_EQ(t.front(), 0.001);
  EXPECT_DOUBLE_EQ(t.back(), 0.005);
}

TEST(RenderSvg, NonFinitePointsBreakTheLineAndGetMarkers) {
  LineChart chart{"Loss", "step", "loss", {}};
  chart.series.push_back({"a", {{1, 5.0}, {2, 4.0}, {3, std::nan("")}, {4, 3.0}, {5, 2.5}}});
  chart.series.push_back({"b <&>", {{1, 5.5}, {2, INFINITY}}});
  std::string svg = render_svg(chart);
  auto es = testing::parse_xml(svg);
  EXPECT_EQ(es[0].name, "svg");
  EXPECT_EQ(count(es, "polyline"), 2u);  // a: steps 1–2 and 4–5
  EXPECT_EQ(count(es, "circle"), 1u);    // b: the lone finite point before inf
  size_t markers = std::count_if(es.begin(), es.end(), [](auto& e) {
    return e.name == "path" && e.attrs.count("class") && e.attrs.at("class") == "non-finite";
  });
  EXPECT_EQ(markers, 2u);
  bool legend_b = std::any_of(es.begin(), es.end(), [](auto& e) { return e.name == "text" && e.text == "b <&>"; });
  EXPECT_TRUE(legend_b);
  EXPECT_NE(svg.find("× = non-finite value"), std::string::npos);
}

TEST(RenderSvg, AnEmptyChartIsStillValidSvg) {
  auto es = testing::parse_xml(render_svg(LineChart{"t", "x", "y", {}}));
  EXPECT_EQ(es[0].name, "svg");
  EXPECT_EQ(count(es, "polyline"), 0u);
}

TEST(RenderSvg, AConstantSeriesGetsARange) {
  LineChart chart{"t", "x", "y", {{"flat", {{1, 3.0}, {2, 3.0}}}}};
  auto es = testing::parse_xml(render_svg(chart));
  EXPECT_EQ(count(es, "polyline"), 1u);
}

TEST(NiceTicks, AnIntegerAxisNeverGetsAFractionalTick) {
  // Steps 1..3: a plain axis would tick every 0.5.
  EXPECT_EQ(nice_ticks(1, 3, 5, false), (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  EXPECT_EQ(nice_ticks(1, 3, 5, true), (std::vector<double>{1, 2, 3}));
  for (double hi : {2.0, 7.0, 13.0, 40.0, 250.0})
    for (double t : nice_ticks(1, hi, 5, true)) EXPECT_EQ(t, std::round(t)) << "hi " << hi;
}

std::vector<testing::XmlElement> with_class(const std::vector<testing::XmlElement>& es, const std::string& cls) {
  std::vector<testing::XmlElement> out;
  for (auto& e : es)
    if (e.attrs.count("class") && e.attrs.at("class") == cls) out.push_back(e);
  return out;
}

// What the report's charts get: 3 steps, cell ids as long as a real matrix's,
// two cells with the same loss curve, one that hung in step 4.
LineChart step_chart() {
  const std::string a = "precision=fp32,prefill=sequential,seq_len=2048,master_weights=true,steps=8";
  const std::string b = "precision=fp16,prefill=sequential,seq_len=2048,master_weights=true,steps=8";
  LineChart chart{"Loss per step", "step", "loss", {}, true};
  chart.series.push_back({a, {{1, 5.0}, {2, 4.5}, {3, 4.0}}, std::nullopt, ""});
  chart.series.push_back({b, {{1, 5.0}, {2, 4.5}, {3, 4.0}}, 4.0, "hang"});
  return chart;
}

TEST(RenderSvg, StepTicksAreWholeNumbers) {
  auto es = testing::parse_xml(render_svg(step_chart()));
  auto ticks = with_class(es, "x-tick");
  ASSERT_GE(ticks.size(), 2u);
  for (auto& t : ticks) EXPECT_EQ(t.text.find('.'), std::string::npos) << t.text;
  EXPECT_EQ(ticks.front().text, "1");
  EXPECT_EQ(ticks.back().text, "4");  // the axis reaches the step the cell hung in
}

TEST(RenderSvg, LegendsAreWholeAndFitTheImage) {
  const LineChart chart = step_chart();
  auto es = testing::parse_xml(render_svg(chart));
  auto legend = with_class(es, "legend");
  ASSERT_EQ(legend.size(), 2u);
  EXPECT_EQ(legend[0].text, chart.series[0].name);
  const double width = std::stod(es[0].attrs.at("width"));
  for (auto& l : legend) {
    // At the widest a 12 px sans-serif character takes (7.5 units), the text ends inside the image.
    EXPECT_LE(std::stod(l.attrs.at("x")) + 7.5 * static_cast<double>(l.text.size()), width) << l.text;
  }
}

TEST(RenderSvg, IdenticalSeriesAreToldApart) {
  auto es = testing::parse_xml(render_svg(step_chart()));
  std::vector<std::string> dashes;
  for (auto& e : es)
    if (e.name == "polyline") dashes.push_back(e.attrs.count("stroke-dasharray") ? e.attrs.at("stroke-dasharray") : "");
  ASSERT_EQ(dashes.size(), 2u);
  EXPECT_NE(dashes[0], dashes[1]);  // drawn on top of each other, both patterns show
  auto legend = with_class(es, "legend");
  EXPECT_NE(legend[1].text.find("(identical to " + step_chart().series[0].name), std::string::npos) << legend[1].text;
  EXPECT_EQ(legend[0].text.find("identical"), std::string::npos);
}

TEST(RenderSvg, AHangIsMarkedAtTheStepItHappenedIn) {
  const std::string svg = render_svg(step_chart());
  auto es = testing::parse_xml(svg);
  auto markers = with_class(es, "failure-marker");
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].attrs.at("data-x"), "4");
  // The marker's line sits where the x axis puts step 4: the tick labelled "4".
  std::string tick_x;
  for (auto& t : with_class(es, "x-tick"))
    if (t.text == "4") tick_x = t.attrs.at("x");
  const size_t g = svg.find("class=\"failure-marker\"");
  ASSERT_NE(g, std::string::npos);
  EXPECT_NE(svg.find("x1=\"" + tick_x + "\"", g), std::string::npos) << svg.substr(g, 300);
  EXPECT_NE(svg.find(">hang at 4<", g), std::string::npos);
}

}  // namespace
}  // namespace harness
