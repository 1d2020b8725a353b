#include "harness/scenario/environment.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(EnvironmentSettings, AMisspelledVariableIsAUsageErrorWithTheRightNameSuggested) {
  try {
    read_environment_settings({"PATH=/bin", "NSA_PREFIL_BATCHED=1"});
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.diagnostics.size(), 1u);
    EXPECT_EQ(format_diagnostic(e.diagnostics[0]),
              "environment: NSA_PREFIL_BATCHED: unknown NSA_* variable in the environment (did you mean "
              "'NSA_PREFILL_BATCHED'?); unset it or fix its name (`nsa-harness list flags`)\n");
  }
}

TEST(EnvironmentSettings, BadValuesAndUnknownFaultsAreRefused) {
  EXPECT_THROW(read_environment_settings({"NSA_PREFILL_BATCHED=yes"}), ScenarioError);
  EXPECT_THROW(read_environment_settings({"NSA_FAULT=causal_lek"}), ScenarioError);
}

TEST(EnvironmentSettings, FlagsAndFaultsAreReadAndTheHarnessOwnVariablesSkipped) {
  auto env = read_environment_settings(
      {"NSA_PREFILL_BATCHED=0", "NSA_FAULT=causal_leak, step5_deadlock", "NSA_HARNESS_REVISION=abc"});
  EXPECT_EQ(env.flags, (std::map<std::string, std::string>{{"NSA_PREFILL_BATCHED", "0"}}));
  EXPECT_EQ(env.faults, (std::vector<std::string>{"causal_leak", "step5_deadlock"}));
}

TEST(EnvironmentSettings, TheScenarioWinsAndEveryAddedSettingIsRecordedAsFromTheEnvironment) {
  EnvironmentSettings env;
  env.flags = {{"NSA_PREFILL_BATCHED", "0"}, {"NSA_STOPGRAD_GATES", "1"}};
  env.faults = {"causal_leak"};
  CellSpec cell;
  cell.flags["NSA_PREFILL_BATCHED"] = "1";
  apply_environment(env, cell);
  EXPECT_EQ(cell.flags.at("NSA_PREFILL_BATCHED"), "1");
  EXPECT_EQ(cell.flags.at("NSA_STOPGRAD_GATES"), "1");
  EXPECT_EQ(cell.faults, std::vector<std::string>{"causal_leak"});
  EXPECT_EQ(cell.from_environment, (std::vector<std::string>{"NSA_STOPGRAD_GATES", "NSA_FAULT=causal_leak"}));
}

}  // namespace
}  // namespace harness
