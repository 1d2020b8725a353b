// `nsa-harness selftest`: runs the fault catalogue and prints, per cell, the
// expected diagnosis against the one found. Exit 0 only when every expectation holds.
#include <fmt/core.h>

#include <filesystem>

#include "harness/analysis/analyze.h"
#include "harness/cli/commands.h"
#include "harness/run/platform.h"
#include "harness/run/run_support.h"
#include "harness/report/render_all.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"

namespace harness::cli {
using run::load_scenario_to_run;
using run::now_compact;
using run::execute_options;
using run::execute_here;

int cmd_selftest(const std::string& self_exe, const std::string& out, int jobs) {
  std::string path = "scenarios/fault_catalogue.yaml";
  if (!std::filesystem::exists(path)) path = std::filesystem::path(default_scenario_path()).parent_path().string() + "/fault_catalogue.yaml";
  auto loaded = load_scenario_to_run(path);
  if (!loaded) return kExitInvalidInput;
  Scenario& sc = *loaded;
  std::string dir = out.empty() ? "runs/selftest-" + now_compact() : out;
  std::filesystem::create_directories(dir);
  RunResult run = execute_here(sc, sc.cells, execute_options(dir, jobs, self_exe, path));
  // A harness failure is no finding about the model: main() makes it exit 4.
  if (run.completion.end == RunEnd::harness_failure) throw std::runtime_error(run.completion.harness_failure);
  analyze(run);
  render_all(run, dir);
  int met = 0, missed = 0, unchecked = 0;
  fmt::print("{:<40} {:<28} {:<28} {}\n", "cell", "expected", "found", "");
  for (auto& c : run.cells) {
    std::string exp = c.expect ? c.expect->value("outcome", "?") + (c.expect->contains("reason") ? "/" + c.expect->value("reason", "") : "") : "-";
    std::string found = std::string(to_string(c.outcome)) + (c.reason ? "/" + *c.reason : "");
    std::string where;
    for (auto& f : c.findings)
      if (c.reason && f.code == *c.reason) {
        where = (f.step ? "step " + std::to_string(*f.step) + " " : "") + f.location;
        break;
      }
    const char* mark = !c.expect_met ? "?" : (*c.expect_met ? "ok" : "MISSED");
    (!c.expect_met ? unchecked : (*c.expect_met ? met : missed))++;
    fmt::print("{:<40} {:<28} {:<28} {:<6} {}\n", c.id, exp, found, mark, where);
  }
  fmt::print("{} passed, {} failed\nreport: {}/report.md\n", met, missed, dir);
  return missed == 0 ? 0 : 1;
}

#ifndef NSA_MUTATION_TEST_FILTER
#define NSA_MUTATION_TEST_FILTER "*"
#endif

int cmd_selftest_mutations(MutationSelftestOptions o) {
  o.scenario_path = default_scenario_path();
  o.default_tests_filter = NSA_MUTATION_TEST_FILTER;
  return run::selftest_mutations(o);
}

}  // namespace harness::cli
