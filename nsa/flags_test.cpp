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
  }
}

}  // namespace
}  // namespace nsa
