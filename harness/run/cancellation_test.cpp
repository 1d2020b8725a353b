#include "harness/run/cancellation.h"

#include <signal.h>

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace harness::run {
namespace {
using ::testing::HasSubstr;

TEST(SignalCancellation, FirstSignalIsRecordedAndAnnouncedOnce) {
  std::ostringstream notice;
  {
    SignalCancellation c(&notice, 3.0);
    EXPECT_FALSE(c.requested());
    ASSERT_EQ(::raise(SIGINT), 0);  // handled: the test process survives
    EXPECT_EQ(c.signal(), SIGINT);
    EXPECT_TRUE(c.predicate()());
    ASSERT_EQ(::raise(SIGTERM), 0);
    EXPECT_EQ(c.signal_source()(), SIGINT) << "the first signal decides";
    // The watcher runs until destruction; the notice must be there by then at the latest.
  }
  EXPECT_THAT(notice.str(), HasSubstr("SIGINT received"));
  EXPECT_THAT(notice.str(), HasSubstr("--resume"));
  EXPECT_EQ(notice.str().find("SIGTERM"), std::string::npos);
}

TEST(SignalCancellation, RestoresThePreviousHandlers) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  { SignalCancellation c(nullptr, 1.0); }
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(before.sa_handler, after.sa_handler);
}

TEST(SignalCancellation, ExitStatusFollowsTheShell) {
  EXPECT_EQ(exit_code_for_signal(SIGINT), 130);
  EXPECT_EQ(exit_code_for_signal(SIGTERM), 143);
  EXPECT_EQ(signal_text(SIGTERM), "SIGTERM");
}

}  // namespace
}  // namespace harness::run
