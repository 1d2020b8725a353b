// Faults and mutations are one shape (named_switches.h): the same properties,
// checked once for each catalogue, each against its own registry and names.
#include "nsa/named_switches.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "nsa/faults.h"
#include "nsa/mutations.h"

namespace nsa {
namespace {

// One catalogue's API, and the names a test uses with it: two names listed out
// of registry order, and a typo of the first.
struct Names {
  const char* two_csv;
  std::vector<std::string> two_in_registry_order;
  const char* typo;
  const char* meant;
};

template <class Row, class Error, auto Rows, auto Find, auto On, auto Enable, auto EnableCsv, auto Active,
          size_t Count>
struct Catalogue {
  using E = Error;
  static const std::vector<Row>& rows() { return Rows(); }
  static const Row* find(std::string_view n) { return Find(n); }
  static bool on(decltype(Row::id) id) { return On(id); }
  static void enable(const std::vector<std::string>& n) { Enable(n); }
  static void enable_csv(std::string_view csv) { EnableCsv(csv); }
  static std::vector<std::string> active() { return Active(); }
  static constexpr size_t kCount = Count;
};

struct Faults : Catalogue<FaultInfo, FaultError, fault_registry, find_fault, fault_on, enable_faults,
                          enable_faults_csv, active_fault_names, static_cast<size_t>(Fault::count_)> {
  static void disable_all() { disable_all_faults(); }
  static Names names() {
    return {"causal_leak, zero_gate_init", {"zero_gate_init", "causal_leak"}, "causal_leek", "causal_leak"};
  }
  struct Guard {  // faults are off unless a test switches them on
    ~Guard() { disable_all_faults(); }
  };
};

struct Mutations : Catalogue<MutationInfo, MutationError, mutation_registry, find_mutation, mutation_on,
                             enable_mutations, enable_mutations_csv, active_mutation_names,
                             static_cast<size_t>(Mutation::count_)> {
  static void disable_all() { disable_all_mutations(); }
  static Names names() {
    return {"decode_window_one_short, gate_slc_win_swapped", {"gate_slc_win_swapped", "decode_window_one_short"},
            "gate_slc_win_swaped", "gate_slc_win_swapped"};
  }
  // Restores whatever NSA_MUTATION switched on, so the test runs under any environment.
  struct Guard {
    uint64_t saved = active_mutation_mask();
    ~Guard() { set_active_mutation_mask(saved); }
  };
};

template <class S>
class NamedSwitches : public ::testing::Test {};
using Catalogues = ::testing::Types<Faults, Mutations>;
TYPED_TEST_SUITE(NamedSwitches, Catalogues);

TYPED_TEST(NamedSwitches, OffUntilNamedThenOnByName) {
  using S = TypeParam;
  typename S::Guard guard;
  S::disable_all();
  for (auto& r : S::rows()) EXPECT_FALSE(S::on(r.id)) << r.name;
  S::enable_csv(S::names().two_csv);
  const auto want = S::names().two_in_registry_order;
  for (auto& r : S::rows()) {
    const bool named = std::find(want.begin(), want.end(), r.name) != want.end();
    EXPECT_EQ(S::on(r.id), named) << r.name;
  }
  EXPECT_EQ(S::active(), want);
  S::enable({"none", ""});  // ignored, not an error
  EXPECT_EQ(S::active(), want);
}

TYPED_TEST(NamedSwitches, AnUnknownNameIsAnErrorListingTheKnownOnesAndSwitchesNothingOn) {
  using S = TypeParam;
  typename S::Guard guard;
  S::disable_all();
  const Names n = S::names();
  try {
    S::enable({n.meant, n.typo});
    FAIL() << "an unknown name was accepted";
  } catch (const typename S::E& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("'") + n.typo + "' (known: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(n.meant), std::string::npos) << e.what();
  }
  EXPECT_TRUE(S::active().empty());
}

TYPED_TEST(NamedSwitches, TheRegistryHoldsEveryIdOnceInEnumOrder) {
  using S = TypeParam;
  ASSERT_EQ(S::rows().size(), S::kCount);
  for (size_t i = 0; i < S::rows().size(); ++i) {
    auto& r = S::rows()[i];
    EXPECT_EQ(static_cast<size_t>(r.id), i) << r.name << " is out of enum order";
    EXPECT_EQ(S::find(r.name), &r);
    EXPECT_FALSE(r.doc.empty()) << r.name;
  }
  EXPECT_EQ(S::find("no_such_name"), nullptr);
}

}  // namespace
}  // namespace nsa
