// make_probes: every probe a cell asks for, under the name it is registered
// with (the probes no longer name themselves), in the documented run order; a
// dense-attention cell leaves out the probes that read the sparse layer.
#include <gtest/gtest.h>

#include "harness/probes/probe.h"

namespace harness {
namespace {

std::vector<std::string> names_made(const CellSpec& spec) {
  std::vector<std::string> names;
  for (auto& p : make_probes(spec)) names.push_back(p->name());
  // The CUPTI probe exists only in CUDA builds with CUPTI; elsewhere its factory makes none.
  if (!names.empty() && names.front() == "cupti") names.erase(names.begin());
  return names;
}

TEST(MakeProbes, EachProbeCarriesItsRegisteredNameInRunOrder) {
  CellSpec spec;
  spec.model.attention = "nsa";
  EXPECT_EQ(names_made(spec),
            (std::vector<std::string>{"timing", "memory", "syncs", "precision", "finite", "invariants", "causality",
                                      "parity", "routing", "gates", "grad_coverage", "learning", "checksum"}));
}

TEST(MakeProbes, DenseCellsAndSwitchedOffProbesAreLeftOut) {
  CellSpec spec;
  spec.model.attention = "dense";
  spec.probes["memory"].enabled = false;
  EXPECT_EQ(names_made(spec), (std::vector<std::string>{"timing", "syncs", "precision", "finite", "causality",
                                                         "grad_coverage", "learning", "checksum"}));
}

}  // namespace
}  // namespace harness
