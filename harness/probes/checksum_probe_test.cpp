// The checksum probe's sampling: the first and last steps always, every N-th
// in between, and nothing else; every 1 is every step.
#include <gtest/gtest.h>

#include "harness/probes/probes.h"

namespace harness {
namespace {

TEST(ChecksumDue, FirstEveryNthAndLast) {
  for (int every = 1; every <= 7; ++every)
    for (int last = 1; last <= 25; ++last)
      for (int step = 1; step <= last; ++step) {
        const bool expected = step == 1 || step == last || step % every == 0;
        EXPECT_EQ(checksum_due(step, every, last), expected) << step << " every " << every << " of " << last;
      }
  int taken = 0;
  for (int step = 1; step <= 100; ++step) taken += checksum_due(step, 10, 100);
  EXPECT_EQ(taken, 11);  // 1, 10, 20, …, 100: a tenth of the host syncs
}

}  // namespace
}  // namespace harness
