// Faults and mutations are one shape (named_switches.h): the same properties,
// checked once for each catalogue, each against its own registry and names.
#include "nsa/named_switches.h"

#include <algorithm>
#include <type_traits>

#include <gtest/gtest.h>

#include "nsa/faults.h"
#include "nsa/mutations.h"

namespace nsa {
namespace {

// The names a test uses with it: two names listed out
// of registry order, and a typo of the first.
struct Names {
  const char* two_csv;
  std::vector<std::string> two_in_registry_order;
  const char* typo;
  const char* meant;
};

// Each catalogue is one NamedSwitches object; S::c() is it.
struct Faults {
  static auto& c() { return faults; }
  using E = FaultError;
  static constexpr size_t kCount = static_cast<size_t>(Fault::count_);
  static Names names() {
    return {"causal_leak, zero_gate_init", {"zero_gate_init", "causal_leak"}, "causal_leek", "causal_leak"};
  }
  struct Guard {  // faults are off unless a test switches them on
    ~Guard() { faults.disable_all(); }
  };
};

struct Mutations {
  static auto& c() { return mutations; }
  using E = MutationError;
  static constexpr size_t kCount = static_cast<size_t>(Mutation::count_);
  static Names names() {
    return {"decode_window_one_short, gate_slc_win_swapped", {"gate_slc_win_swapped", "decode_window_one_short"},
            "gate_slc_win_swaped", "gate_slc_win_swapped"};
  }
  // Restores whatever NSA_MUTATION switched on, so the test runs under any environment.
  struct Guard {
    uint64_t saved = mutations.mask();
    ~Guard() { mutations.set_mask(saved); }
  };
};

template <class S>
class NamedSwitches : public ::testing::Test {};
using Catalogues = ::testing::Types<Faults, Mutations>;
TYPED_TEST_SUITE(NamedSwitches, Catalogues);

TYPED_TEST(NamedSwitches, OffUntilNamedThenOnByName) {
  using S = TypeParam;
  typename S::Guard guard;
  auto& c = S::c();
  c.disable_all();
  for (auto& r : c.rows()) EXPECT_FALSE(c.on(r.id)) << r.name;
  c.enable_csv(S::names().two_csv);
  const auto want = S::names().two_in_registry_order;
  for (auto& r : c.rows()) {
    const bool named = std::find(want.begin(), want.end(), r.name) != want.end();
    EXPECT_EQ(c.on(r.id), named) << r.name;
  }
  EXPECT_EQ(c.active_names(), want);
  c.enable({"none", ""});  // ignored, not an error
  EXPECT_EQ(c.active_names(), want);
}

TYPED_TEST(NamedSwitches, AnUnknownNameIsAnErrorListingTheKnownOnesAndSwitchesNothingOn) {
  using S = TypeParam;
  typename S::Guard guard;
  auto& c = S::c();
  c.disable_all();
  const Names n = S::names();
  try {
    c.enable({n.meant, n.typo});
    FAIL() << "an unknown name was accepted";
  } catch (const typename S::E& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("'") + n.typo + "' (known: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(n.meant), std::string::npos) << e.what();
  }
  EXPECT_TRUE(c.active_names().empty());
}

TYPED_TEST(NamedSwitches, TheRegistryHoldsEveryIdOnceInEnumOrder) {
  using S = TypeParam;
  auto& c = S::c();
  ASSERT_EQ(c.rows().size(), S::kCount);
  for (size_t i = 0; i < c.rows().size(); ++i) {
    auto& r = c.rows()[i];
    EXPECT_EQ(static_cast<size_t>(r.id), i) << r.name << " is out of enum order";
    EXPECT_EQ(c.find(r.name), &r);
    EXPECT_FALSE(r.doc.empty()) << r.name;
  }
  EXPECT_EQ(c.find("no_such_name"), nullptr);
}

// The mask is the active set, bit i for row i: a mask restored from set_mask
// names exactly the rows whose bits are set, and on() agrees bit by bit.
TYPED_TEST(NamedSwitches, TheMaskIsTheActiveSetBitPerRow) {
  using S = TypeParam;
  typename S::Guard guard;
  auto& c = S::c();
  using Mask = std::decay_t<decltype(c.mask())>;
  const size_t first = 0, last = c.rows().size() - 1;
  c.set_mask((Mask{1} << first) | (Mask{1} << last));
  EXPECT_EQ(c.active_names(), (std::vector<std::string>{std::string(c.rows()[first].name),
                                                         std::string(c.rows()[last].name)}));
  for (size_t i = 0; i < c.rows().size(); ++i) EXPECT_EQ(c.on(c.rows()[i].id), i == first || i == last) << i;
  c.disable_all();
  EXPECT_EQ(c.mask(), Mask{0});
}

}  // namespace
}  // namespace nsa
