#pragma once
// `selftest --mutations[=a,b]`: every mutation (nsa/mutations.h) against the
// model's unit tests and a scenario; DIR/mutations.md says what caught each.
#include <string>

namespace harness::run {

struct MutationSelftestOptions {
  std::string names;         // "all" or a comma-separated subset
  std::string out;           // run directory; empty → runs/selftest-mutations-<timestamp>
  std::string tests_filter;  // nsa_model_test's --gtest_filter; empty → default_tests_filter
  int jobs = 1;              // test binaries, and cells, side by side
  std::string self_exe;      // children are spawned from it; nsa_model_test is looked for beside its build
  std::string scenario_path;         // the scenario run clean and once per mutation
  std::string default_tests_filter = "*";  // the layer's tests, as CTest runs them
};

// Exit status: 0 when every chosen mutation is caught by both the tests and the
// scenario, 1 when one is missed, 2 for an unknown mutation or a scenario that
// does not load.
int selftest_mutations(const MutationSelftestOptions& o);

}  // namespace harness::run
