#include "nsa/mutations.h"

#include <gtest/gtest.h>

#include "nsa/faults.h"

namespace nsa {
namespace {

// Restores whatever NSA_MUTATION switched on, so the test runs under any environment.
struct MaskGuard {
  uint64_t saved = active_mutation_mask();
  ~MaskGuard() { set_active_mutation_mask(saved); }
};

TEST(Mutations, OffUntilNamedThenOnByName) {
  MaskGuard guard;
  disable_all_mutations();
  for (auto& m : mutation_registry()) EXPECT_FALSE(mutation_on(m.id)) << m.name;
  enable_mutations_csv("gate_slc_win_swapped, decode_window_one_short");
  EXPECT_TRUE(mutation_on(Mutation::gate_slc_win_swapped));
  EXPECT_TRUE(mutation_on(Mutation::decode_window_one_short));
  EXPECT_FALSE(mutation_on(Mutation::rope_position_offset));
  EXPECT_EQ(active_mutation_names(), (std::vector<std::string>{"gate_slc_win_swapped", "decode_window_one_short"}));
}

TEST(Mutations, UnknownNameIsAnErrorListingTheKnownOnes) {
  MaskGuard guard;
  try {
    enable_mutations({"gate_slc_win_swaped"});
    FAIL() << "an unknown mutation was accepted";
  } catch (const MutationError& e) {
    EXPECT_NE(std::string(e.what()).find("gate_slc_win_swapped"), std::string::npos) << e.what();
  }
}

TEST(Mutations, RegistryCoversEveryMutationOnceWithItsEquationAndSite) {
  EXPECT_EQ(mutation_registry().size(), static_cast<size_t>(Mutation::count_));
  for (size_t i = 0; i < mutation_registry().size(); ++i) {
    auto& m = mutation_registry()[i];
    EXPECT_EQ(static_cast<size_t>(m.id), i) << m.name << " is out of enum order";
    EXPECT_EQ(find_mutation(m.name), &m);
    EXPECT_FALSE(m.doc.empty() || m.equation.empty() || m.plant.empty()) << m.name;
    // A mutation is not a fault: one name must never mean both.
    EXPECT_EQ(find_fault(m.name), nullptr) << m.name;
  }
}

TEST(Mutations, EverySiteKindIsPlanted) {
  int per_site[3] = {0, 0, 0};
  for (auto& m : mutation_registry()) ++per_site[static_cast<int>(m.site)];
  // Shared code is what parity against the reference cannot see; the paths' own code is what it can.
  EXPECT_GE(per_site[static_cast<int>(MutationSite::shared)], 3);
  EXPECT_GE(per_site[static_cast<int>(MutationSite::batched)], 3);
  EXPECT_GE(per_site[static_cast<int>(MutationSite::sequential)], 3);
}

}  // namespace
}  // namespace nsa
