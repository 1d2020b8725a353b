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

}  // namespace
}  // namespace harness
