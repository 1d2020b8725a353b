#include "harness/scenario/axes.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "nsa/config.h"
#include "nsa/flags.h"

namespace harness {
namespace {

// The format doc is what users read: every axis of the table must be in its
// "Axis names" table, or an axis would exist that nobody can learn about.
TEST(AxisTable, EveryAxisIsDocumented) {
  std::ifstream in(std::string(NSA_DOCS_DIR) + "/scenario-format.md");
  ASSERT_TRUE(in) << NSA_DOCS_DIR;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const auto start = doc.find("Axis names");
  ASSERT_NE(start, std::string::npos);
  const std::string section = doc.substr(start, doc.find("\n\n", doc.find("| axis", start)) - start);
  for (const AxisDef& a : axis_table()) {
    SCOPED_TRACE(std::string(a.name));
    EXPECT_NE(section.find("`" + std::string(a.name) + "`"), std::string::npos);
    EXPECT_FALSE(a.values.empty());
    EXPECT_FALSE(a.sets.empty());
  }
}

TEST(AxisTable, NamesAreUniqueAndNeverAFlagName) {
  std::set<std::string> seen;
  for (const AxisDef& a : axis_table()) {
    EXPECT_TRUE(seen.insert(std::string(a.name)).second) << a.name;
    EXPECT_EQ(nsa::find_flag(std::string(a.name)), nullptr) << a.name;
  }
}

TEST(AxisTable, EveryFlagIsAnAxisAndUnknownNamesAreNot) {
  for (auto& f : nsa::flag_registry()) EXPECT_TRUE(is_axis_name(std::string(f.name))) << f.name;
  EXPECT_FALSE(is_axis_name("seqlen"));
  EXPECT_FALSE(is_axis_name("NSA_NO_SUCH_FLAG"));
}

// Every model-config field is an axis under its path in a `model:` mapping,
// except `name` (sets nothing) and the fields with an axis of their own.
TEST(AxisTable, ModelFieldsAreAxesNamedByTheirPath) {
  nsa::ModelConfig c;
  nsa::visit_model_fields(c, [](std::string_view key, auto&) {
    const bool own_row = key == "name" || key == "attention";
    EXPECT_EQ(is_axis_name("model." + std::string(key)), !own_row) << key;
  });
  nsa::visit_nsa_params(c.nsa, [](std::string_view key, auto&) {
    EXPECT_EQ(is_axis_name("model.nsa." + std::string(key)), key != "phi") << key;
  });
  EXPECT_FALSE(is_axis_name("model.nsa"));
  EXPECT_FALSE(is_axis_name("model.d_kk"));
  EXPECT_FALSE(applies_first("model.d_k"));  // edits the config `model` set, so after it
}

// `model` replaces the whole config; applied after `phi` it would undo it.
TEST(AxisTable, OnlyTheWholeModelIsAppliedFirst) {
  for (const AxisDef& a : axis_table())
    EXPECT_EQ(applies_first(std::string(a.name)), a.name == "model") << a.name;
  EXPECT_FALSE(applies_first("NSA_PREFILL_BATCHED"));
}

}  // namespace
}  // namespace harness
