#include "nsa/flags.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace nsa {
namespace {

TEST(Flags, DefaultsComeFromTheRegistry) {
  Flags f;
  EXPECT_TRUE(f.get_bool("NSA_PREFILL_BATCHED"));
  EXPECT_FALSE(f.get_bool("NSA_FORCE_PARITY"));
  EXPECT_EQ(f.get_int("NSA_HEARTBEAT_EVERY"), 0);
}

TEST(Flags, UnknownNameListsCloseMatches) {
  Flags f;
  try {
    f.set("NSA_PREFIL_BATCHED", "1");
    FAIL();
  } catch (const FlagError& e) {
    EXPECT_STREQ(e.what(), "unknown flag NSA_PREFIL_BATCHED (did you mean NSA_PREFILL_BATCHED?)");
  }
}

TEST(Flags, YamlOneOneBooleanWordsAreRefused) {
  Flags f;
  for (const char* word : {"on", "off", "yes", "no", "Yes"}) {
    SCOPED_TRACE(word);
    EXPECT_THROW(f.set("NSA_USE_SEL_MASK", word), FlagError);
  }
  f.set("NSA_USE_SEL_MASK", "1");
  EXPECT_TRUE(f.get_bool("NSA_USE_SEL_MASK"));
  f.set("NSA_USE_SEL_MASK", "false");
  EXPECT_FALSE(f.get_bool("NSA_USE_SEL_MASK"));
}

TEST(Flags, IntegerFlagsRejectText) {
  Flags f;
  EXPECT_THROW(f.set("NSA_HEARTBEAT_EVERY", "often"), FlagError);
  f.set("NSA_HEARTBEAT_EVERY", "16");
  EXPECT_EQ(f.get_int("NSA_HEARTBEAT_EVERY"), 16);
}

TEST(Flags, WindowBackwardDefaultsToAuto) {
  EXPECT_EQ(Flags().get_string("NSA_WINDOW_BWD"), "auto");
}

TEST(Flags, WindowBackwardTakesItsFourChoices) {
  for (const char* value : {"auto", "ours", "cudnn", "cudnn_atomic"}) {
    SCOPED_TRACE(value);
    Flags f;
    f.set("NSA_WINDOW_BWD", value);
    EXPECT_EQ(f.get_string("NSA_WINDOW_BWD"), value);
  }
}

TEST(Flags, WindowBackwardRefusesOtherTextNamingTheChoices) {
  // A near miss, another case, the enum's own spelling, an empty value: none is guessed.
  for (const char* value : {"cudnn_atomc", "CUDNN", "cudnn_deterministic", "", "1"}) {
    SCOPED_TRACE(value);
    Flags f;
    try {
      f.set("NSA_WINDOW_BWD", value);
      ADD_FAILURE() << "accepted";
    } catch (const FlagError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("NSA_WINDOW_BWD: expected auto, ours, cudnn or cudnn_atomic, got '") + value + "'");
    }
    EXPECT_EQ(f.get_string("NSA_WINDOW_BWD"), "auto");  // the refused value was not kept
  }
}

TEST(Flags, BackwardDqDefaultsToAuto) {
  EXPECT_EQ(Flags().get_string("NSA_SELECTED_DQ"), "auto");
}

TEST(Flags, BackwardDqTakesItsFourChoices) {
  for (const char* value : {"auto", "kernel", "atomic", "slots"}) {
    SCOPED_TRACE(value);
    Flags f;
    f.set("NSA_SELECTED_DQ", value);
    EXPECT_EQ(f.get_string("NSA_SELECTED_DQ"), value);
  }
}

TEST(Flags, BackwardDqRefusesOtherTextNamingTheChoices) {
  // A near miss, another case, NSA_WINDOW_BWD's spellings, an empty value: none is guessed.
  for (const char* value : {"atomc", "Atomic", "cudnn_atomic", "ours", "slot", "", "1"}) {
    SCOPED_TRACE(value);
    Flags f;
    try {
      f.set("NSA_SELECTED_DQ", value);
      ADD_FAILURE() << "accepted";
    } catch (const FlagError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("NSA_SELECTED_DQ: expected auto, kernel, atomic or slots, got '") + value + "'");
    }
    EXPECT_EQ(f.get_string("NSA_SELECTED_DQ"), "auto");  // the refused value was not kept
  }
}

// The choices are part of the table entry, checked for every string flag that
// lists them; the free-text ones (NSA_FAULT) still take any text.
TEST(Flags, StringFlagsWithoutChoicesTakeAnyText) {
  const FlagInfo* fault = find_flag("NSA_FAULT");
  ASSERT_NE(fault, nullptr);
  EXPECT_TRUE(fault->allowed.empty());
  EXPECT_FALSE(check_flag_value(*fault, "anything,at all").has_value());
  const FlagInfo* bwd = find_flag("NSA_WINDOW_BWD");
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(check_flag_value(*bwd, "x").value_or("(accepted)"), "expected auto, ours, cudnn or cudnn_atomic, got 'x'");
}

TEST(Flags, EnvironmentIsValidated) {
  ::setenv("NSA_USE_CUDA_SELL", "1", 1);
  try {
    Flags::from_environment();
    ::unsetenv("NSA_USE_CUDA_SELL");
    FAIL();
  } catch (const FlagError& e) {
    ::unsetenv("NSA_USE_CUDA_SELL");
    std::string msg = e.what();
    EXPECT_NE(msg.find("NSA_USE_CUDA_SEL"), std::string::npos) << msg;
  }
  ::setenv("NSA_FORCE_PARITY", "1", 1);
  Flags f = Flags::from_environment();
  ::unsetenv("NSA_FORCE_PARITY");
  EXPECT_TRUE(f.get_bool("NSA_FORCE_PARITY"));
}

TEST(Flags, EveryRegisteredFlagHasADocAndAValidDefault) {
  for (auto& f : flag_registry()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_FALSE(f.doc.empty());
    EXPECT_FALSE(check_flag_value(f, f.default_value).has_value());
    // Choices are for string flags; each is named in the doc, so `nsa-harness list flags` shows them.
    if (!f.allowed.empty()) EXPECT_EQ(f.type, FlagType::string);
    for (auto choice : f.allowed) EXPECT_NE(f.doc.find(choice), std::string_view::npos) << choice;
  }
}

// A string flag from the environment: `bad` refused with `message`, `good` kept.
void expect_environment_choices(const char* flag, const char* bad, const char* message, const char* good) {
  SCOPED_TRACE(flag);
  ::setenv(flag, bad, 1);
  try {
    Flags::from_environment();
    ::unsetenv(flag);
    ADD_FAILURE() << "accepted " << bad;
  } catch (const FlagError& e) {
    ::unsetenv(flag);
    EXPECT_STREQ(e.what(), message);
  }
  ::setenv(flag, good, 1);
  Flags f = Flags::from_environment();
  ::unsetenv(flag);
  EXPECT_EQ(f.get_string(flag), good);
}

TEST(Flags, EnvironmentValueOutsideTheChoicesIsRefused) {
  expect_environment_choices("NSA_WINDOW_BWD", "atomic",
                             "NSA_WINDOW_BWD: expected auto, ours, cudnn or cudnn_atomic, got 'atomic'", "cudnn_atomic");
  expect_environment_choices("NSA_SELECTED_DQ", "atomics", "NSA_SELECTED_DQ: expected auto, kernel, atomic or slots, got 'atomics'",
                             "atomic");
}

}  // namespace
}  // namespace nsa
