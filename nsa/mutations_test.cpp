#include "nsa/mutations.h"

#include <gtest/gtest.h>

#include "nsa/faults.h"

namespace nsa {
namespace {

// The switch shape (on by name, unknown names, registry order) is checked with
// the faults' in named_switches_test.cpp; here, what only mutations carry.
TEST(Mutations, EveryMutationNamesItsEquationAndPlantSite) {
  for (auto& m : mutations.rows()) {
    EXPECT_FALSE(m.equation.empty() || m.plant.empty()) << m.name;
    // A mutation is not a fault: one name must never mean both.
    EXPECT_EQ(faults.find(m.name), nullptr) << m.name;
  }
}

TEST(Mutations, EverySiteKindIsPlanted) {
  int per_site[3] = {0, 0, 0};
  for (auto& m : mutations.rows()) ++per_site[static_cast<int>(m.site)];
  // Shared code is what parity against the reference cannot see; the paths' own code is what it can.
  EXPECT_GE(per_site[static_cast<int>(MutationSite::shared)], 3);
  EXPECT_GE(per_site[static_cast<int>(MutationSite::batched)], 3);
  EXPECT_GE(per_site[static_cast<int>(MutationSite::sequential)], 3);
}

}  // namespace
}  // namespace nsa
