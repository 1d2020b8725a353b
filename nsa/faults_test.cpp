#include "nsa/faults.h"

#include <gtest/gtest.h>

namespace nsa {
namespace {

TEST(Faults, OffByDefaultAndSwitchedOnByName) {
  disable_all_faults();
  for (auto& f : fault_registry()) EXPECT_FALSE(fault_on(f.id)) << f.name;
  enable_faults_csv("causal_leak, zero_gate_init");
  EXPECT_TRUE(fault_on(Fault::causal_leak));
  EXPECT_TRUE(fault_on(Fault::zero_gate_init));
  EXPECT_FALSE(fault_on(Fault::step5_deadlock));
  EXPECT_EQ(active_fault_names(), (std::vector<std::string>{"zero_gate_init", "causal_leak"}));
  disable_all_faults();
}

TEST(Faults, UnknownNameIsAnError) {
  EXPECT_THROW(enable_faults({"causal_leek"}), FaultError);
}

TEST(Faults, RegistryCoversEveryFault) {
  EXPECT_EQ(fault_registry().size(), static_cast<size_t>(Fault::count_));
  for (auto& f : fault_registry()) {
    EXPECT_EQ(find_fault(f.name), &f);
    EXPECT_FALSE(f.doc.empty());
  }
}

}  // namespace
}  // namespace nsa
