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

// Every issue a config text raises, whole: "line:col: key: message". Semantic
// issues point at the mapping (1:1 here), reading issues at the offending node.
std::vector<std::string> issues_of(const std::string& text) {
  std::vector<ConfigIssue> issues;
  parse(text, issues);
  std::vector<std::string> out;
  for (auto& i : issues)
    out.push_back(std::to_string(i.line) + ":" + std::to_string(i.col) + ": " + i.key + ": " + i.message);
  return out;
}
using Lines = std::vector<std::string>;

TEST(ModelConfig, HeadsNotDivisibleByGroups) {
  EXPECT_EQ(issues_of("n_heads: 6\nn_kv_groups: 4\n"),
            Lines{"1:1: n_heads: n_heads (6) must be divisible by n_kv_groups (4)"});
}

TEST(ModelConfig, BlockSizesMustBeMultiplesOfTheStride) {
  EXPECT_EQ(issues_of("nsa: {cmp_block: 30, cmp_stride: 16, sel_block: 40}\n"),
            (Lines{"1:1: nsa.cmp_block: compression block l (30) must be a multiple of the stride d (16)",
                   "1:1: nsa.sel_block: selection block l' (40) must be a multiple of the stride d (16)"}));
}

TEST(ModelConfig, SizesMustBePositive) {
  EXPECT_EQ(issues_of("d_model: 0\nnsa: {window: -1}\n"),
            (Lines{"1:1: d_model: must be > 0, got 0", "1:1: nsa.window: must be > 0, got -1"}));
}

TEST(ModelConfig, UnknownKeySuggestsTheCloseOne) {
  EXPECT_EQ(issues_of("d_modle: 64\n"), Lines{"1:1: d_modle: unknown key (did you mean 'd_model'?)"});
}

TEST(ModelConfig, WrongTypeNamesTheKeyAndPosition) {
  EXPECT_EQ(issues_of("n_layers: 2\nd_k: sixteen\n"), Lines{"2:6: d_k: expected an integer, got 'sixteen'"});
}

// The string fields keep their own wording for a value that is not a scalar.
TEST(ModelConfig, StringFieldsRefuseAMapping) {
  EXPECT_EQ(issues_of("name: {a: 1}\nnsa: {phi: [mlp]}\n"),
            (Lines{"1:7: name: expected a string", "2:12: nsa.phi: expected 'mlp' or 'mean'"}));
}

TEST(ModelConfig, SelectionCountMustCoverForcedBlocks) {
  EXPECT_EQ(issues_of("nsa: {sel_count: 2}\n"),
            Lines{"1:1: nsa.sel_count: must be ≥ 3: it counts the initial block and the two local blocks, which are "
                  "always selected"});
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
  EXPECT_EQ(back.n_kv_groups, c.n_kv_groups);
  EXPECT_EQ(back.rope_base, c.rope_base);
  EXPECT_EQ(back.max_seq_len, c.max_seq_len);
  EXPECT_EQ(back.nsa.cmp_stride, c.nsa.cmp_stride);
  EXPECT_EQ(back.nsa.window, c.nsa.window);
  EXPECT_EQ(back.nsa.phi, c.nsa.phi);
}

}  // namespace
}  // namespace nsa
