#include "nsa/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace nsa {
namespace {

ModelConfig parse(const std::string& text, std::vector<ConfigIssue>& issues) {
  return model_config_from_yaml(YAML::Load(text), issues);
}

TEST(ModelConfig, BuiltinConfigsLoadAndValidate) {
  for (const char* name : {"tiny", "smoke", "m7c_125m", "paper_kernel"}) {
    SCOPED_TRACE(name);
    ModelConfig c = load_model_config(name);
    EXPECT_EQ(c.name, name);
    EXPECT_TRUE(validate(c).empty());
  }
}

TEST(ModelConfig, TinyMatchesTheDesign) {
  ModelConfig c = load_model_config("tiny");
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_groups, 2);
  EXPECT_EQ(c.d_k, 16);
  EXPECT_EQ(c.nsa.cmp_block, 8);
  EXPECT_EQ(c.nsa.cmp_stride, 4);
  EXPECT_EQ(c.nsa.sel_block, 16);
  EXPECT_EQ(c.nsa.sel_count, 4);
  EXPECT_EQ(c.nsa.window, 32);
}

TEST(ModelConfig, HeadsNotDivisibleByGroups) {
  std::vector<ConfigIssue> issues;
  parse("n_heads: 6\nn_kv_groups: 4\n", issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "n_heads");
  EXPECT_EQ(issues[0].message, "n_heads (6) must be divisible by n_kv_groups (4)");
}

TEST(ModelConfig, BlockSizesMustBeMultiplesOfTheStride) {
  std::vector<ConfigIssue> issues;
  parse("nsa: {cmp_block: 30, cmp_stride: 16, sel_block: 40}\n", issues);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].key, "nsa.cmp_block");
  EXPECT_EQ(issues[0].message, "compression block l (30) must be a multiple of the stride d (16)");
  EXPECT_EQ(issues[1].key, "nsa.sel_block");
  EXPECT_EQ(issues[1].message, "selection block l' (40) must be a multiple of the stride d (16)");
}

TEST(ModelConfig, SizesMustBePositive) {
  std::vector<ConfigIssue> issues;
  parse("d_model: 0\nnsa: {window: -1}\n", issues);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].key, "d_model");
  EXPECT_EQ(issues[0].message, "must be > 0, got 0");
  EXPECT_EQ(issues[1].key, "nsa.window");
}

TEST(ModelConfig, UnknownKeySuggestsTheCloseOne) {
  std::vector<ConfigIssue> issues;
  parse("d_modle: 64\n", issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "d_modle");
  EXPECT_EQ(issues[0].message, "unknown key (did you mean 'd_model'?)");
  EXPECT_EQ(issues[0].line, 1);
  EXPECT_EQ(issues[0].col, 1);
}

TEST(ModelConfig, WrongTypeNamesTheKeyAndPosition) {
  std::vector<ConfigIssue> issues;
  parse("n_layers: 2\nd_k: sixteen\n", issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "d_k");
  EXPECT_EQ(issues[0].message, "expected an integer, got 'sixteen'");
  EXPECT_EQ(issues[0].line, 2);
  EXPECT_EQ(issues[0].col, 6);
}

TEST(ModelConfig, SelectionCountMustCoverForcedBlocks) {
  std::vector<ConfigIssue> issues;
  parse("nsa: {sel_count: 2}\n", issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].key, "nsa.sel_count");
}

TEST(ModelConfig, UnknownNamedConfigListsTheKnownOnes) {
  try {
    load_model_config("tinny");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown model config 'tinny'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tiny"), std::string::npos) << msg;
  }
}

TEST(ModelConfig, YamlRoundTrip) {
  ModelConfig c = load_model_config("smoke");
  std::vector<ConfigIssue> issues;
  ModelConfig back = parse(to_yaml(c), issues);
  EXPECT_TRUE(issues.empty());
  EXPECT_EQ(back.d_model, c.d_model);
  EXPECT_EQ(back.nsa.window, c.nsa.window);
  EXPECT_EQ(back.nsa.phi, c.nsa.phi);
}

}  // namespace
}  // namespace nsa
