#include "harness/report/junit_writer.h"

#include <gtest/gtest.h>

#include "harness/testing/report_fixtures.h"
#include "harness/report/xml_check.h"

namespace harness {
namespace {
using testing::XmlElement;

std::vector<const XmlElement*> children(const std::vector<XmlElement>& es, int parent, const std::string& name) {
  std::vector<const XmlElement*> out;
  for (auto& e : es)
    if (e.parent == parent && e.name == name) out.push_back(&e);
  return out;
}

int index_of(const std::vector<XmlElement>& es, const XmlElement* e) { return static_cast<int>(e - es.data()); }

TEST(Junit, OneTestcasePerCellWithFailuresAndSkips) {
  RunResult r = testing::fp16_nan_run();
  auto es = testing::parse_xml(render_junit(r));
  ASSERT_EQ(es[0].name, "testsuites");
  EXPECT_EQ(es[0].attrs.at("tests"), "3");
  EXPECT_EQ(es[0].attrs.at("failures"), "1");
  EXPECT_EQ(es[0].attrs.at("skipped"), "1");
  auto suites = children(es, 0, "testsuite");
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0]->attrs.at("name"), "fp16_nan");
  auto cases = children(es, index_of(es, suites[0]), "testcase");
  ASSERT_EQ(cases.size(), r.cells.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(r.cells[i].id);
    EXPECT_EQ(cases[i]->attrs.at("name"), r.cells[i].id);
    auto failures = children(es, index_of(es, cases[i]), "failure");
    auto skips = children(es, index_of(es, cases[i]), "skipped");
    EXPECT_EQ(failures.size(), r.cells[i].outcome == Outcome::fail ? 1u : 0u);
    EXPECT_EQ(skips.size(), r.cells[i].outcome == Outcome::skip ? 1u : 0u);
  }
  auto failure = children(es, index_of(es, cases[1]), "failure")[0];
  EXPECT_EQ(failure->attrs.at("type"), "non_finite");
  EXPECT_EQ(failure->attrs.at("message"), "fail (non_finite): non-finite loss at step 2");
  EXPECT_EQ(failure->text, "step 2\nlocation: layer 1 / slc / softmax\n");
  EXPECT_EQ(children(es, index_of(es, cases[2]), "skipped")[0]->attrs.at("message"), "no_cuda: no CUDA device");
}

TEST(Junit, CellsMissingFromEveryShardAreErrorsNotPasses) {
  RunResult r = testing::fp16_nan_run();
  r.completion.end = RunEnd::cells_missing;
  r.completion.not_run = {"precision=bf16"};
  auto es = testing::parse_xml(render_junit(r));
  EXPECT_EQ(es[0].attrs.at("tests"), "4");
  EXPECT_EQ(es[0].attrs.at("errors"), "1");
  auto suite = children(es, 0, "testsuite")[0];
  auto cases = children(es, index_of(es, suite), "testcase");
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[3]->attrs.at("name"), "precision=bf16");
  auto errors = children(es, index_of(es, cases[3]), "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]->attrs.at("type"), "missing");
}

TEST(Junit, MarkupInIdsAndMessagesIsEscaped) {
  RunResult r;
  r.scenario = {{"name", "a<b"}};
  CellResult c;
  c.id = "data=bytes:\"x&y\"<z>";
  c.outcome = Outcome::error;
  c.reason = "exception";
  Finding f = testing::finding("exception", Severity::blocking, "what(): <bad> & \x01worse");
  f.detail = "</failure>";
  c.findings = {f};
  r.cells = {c};
  std::vector<XmlElement> es;
  ASSERT_NO_THROW(es = testing::parse_xml(render_junit(r)));
  auto tc = std::find_if(es.begin(), es.end(), [](auto& e) { return e.name == "testcase"; });
  ASSERT_NE(tc, es.end());
  EXPECT_EQ(tc->attrs.at("name"), c.id);
  auto fail = std::find_if(es.begin(), es.end(), [](auto& e) { return e.name == "failure"; });
  EXPECT_EQ(fail->attrs.at("message"), "error (exception): what(): <bad> & worse");
  EXPECT_EQ(fail->text, "</failure>");
}

TEST(Junit, APassThatMissesAGateIsAFailure) {
  RunResult r;
  CellResult c;
  c.id = "default";
  c.outcome = Outcome::pass;
  c.metrics.tok_s = 27;
  GateSpec gates;
  gates.require_finite = false;
  gates.min_tok_s = 300;
  c.gates = gates;
  r.cells = {c};
  auto es = testing::parse_xml(render_junit(r));
  auto fail = std::find_if(es.begin(), es.end(), [](auto& e) { return e.name == "failure"; });
  ASSERT_NE(fail, es.end());
  EXPECT_EQ(fail->attrs.at("type"), "gate_min_tok_s");
}

TEST(XmlCheck, RejectsMalformedDocuments) {
  EXPECT_THROW(testing::parse_xml("<a><b></a></b>"), std::runtime_error);
  EXPECT_THROW(testing::parse_xml("<a x=1/>"), std::runtime_error);
  EXPECT_THROW(testing::parse_xml("<a>x & y</a>"), std::runtime_error);
  EXPECT_THROW(testing::parse_xml("<a>"), std::runtime_error);
  EXPECT_NO_THROW(testing::parse_xml("<?xml version=\"1.0\"?>\n<a x=\"&lt;\"><b/>t</a>\n"));
}

}  // namespace
}  // namespace harness
