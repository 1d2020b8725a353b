// `selftest --mutations`: tests the tests. For every mutation of the
// NSA layer (nsa/mutations.h: bugs planted without the harness knowing them) it
// runs (a) the model's unit tests, nsa_model_test, with NSA_MUTATION=<name>, and
// (b) the default scenario with NSA_MUTATION=<name> in every cell's flags,
// through the same execution and analysis as `run`. A mutation counts as caught
// by the tests when a test fails (or the binary dies), and by the scenario when
// the decision is not GO with a finding the clean model does not show. This is
// the only part of the harness that reads the mutation registry: the analysis
// sees a mutated cell exactly as it sees any other.
#include <fmt/core.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness/run/mutation_selftest.h"

#include "harness/analysis/analyze.h"
#include "harness/analysis/gtest_failures.h"
#include "harness/run/platform.h"
#include "harness/run/run_support.h"
#include "harness/core/atomic_file.h"
#include "harness/report/render_all.h"
#include "harness/scenario/diagnostic.h"
#include "harness/scenario/scenario.h"
#include "harness/supervisor/child_process.h"
#include "nsa/mutations.h"

namespace harness::run {
namespace {
namespace fs = std::filesystem;

// The layer's tests take one to two minutes on a loaded 2-core machine (every
// test, training and gradient checks included, about fifteen); a mutation that
// makes them run far longer is reported, not waited for.
constexpr double kTestDeadlineS = 1800;

constexpr int kInvalidInput = 2;  // an unknown mutation name or a scenario that does not load

struct TestsVerdict {
  bool ran = false, caught = false;
  std::string how;                  // "exit 1", "killed by SIGSEGV", "deadline", or why it did not run
  std::vector<std::string> failed;  // test names, in the order they failed
};

struct ScenarioVerdict {
  Decision decision = Decision::go;
  bool caught = false;
  std::map<std::string, std::vector<const Finding*>> by_code;  // findings the clean run does not show
  RunResult run;
  std::string dir;
};

struct Row {
  const nsa::MutationInfo* m = nullptr;
  TestsVerdict tests;
  ScenarioVerdict scenario;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// <build>/harness/cli/nsa-harness → <build>/nsa/nsa_model_test.
std::optional<std::string> find_model_test(const std::string& self_exe) {
  fs::path p = fs::path(self_exe).parent_path().parent_path().parent_path() / "nsa" / "nsa_model_test";
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  return std::nullopt;
}

TestsVerdict run_model_tests(const std::string& binary, const std::string& filter, const std::string& mutation,
                             const std::string& log) {
  TestsVerdict v;
  supervisor::ChildLaunch launch;
  launch.argv = {binary, "--gtest_filter=" + filter};
  launch.env = {{"NSA_MUTATION", mutation}};
  launch.output_path = log;
  std::optional<supervisor::ChildProcess> child;
  try {
    child.emplace(supervisor::ChildProcess::spawn(launch));
  } catch (const std::exception& e) {
    v.how = e.what();
    return v;
  }
  auto status = child->wait_for(kTestDeadlineS);
  v.ran = true;
  if (!status) {
    child->kill_group(5);
    v.how = fmt::format("deadline ({:.0f} s)", kTestDeadlineS);
  } else {
    v.how = supervisor::describe(*status);
  }
  v.failed = failed_gtest_names(read_file(log));
  // Exit 2 is an unknown NSA_MUTATION name, never a catch; a deadline proves nothing either.
  const bool died = status && status->term_signal.has_value();
  v.caught = status && ((status->exit_code == 1 && !v.failed.empty()) || died);
  return v;
}

// Timing depends on the machine's load, not on what the layer computes: a slow
// step next to a mutation is noise, never the catch.
bool is_timing(const std::string& code) {
  static const std::set<std::string> kTiming = {
      std::string(reason::slow_step),      std::string(reason::slow_step_growth), std::string(reason::slow_host_syncs),
      std::string(reason::step_timeout),   std::string(reason::gate_max_step_ms), std::string(reason::gate_min_tok_s),
      std::string(reason::host_syncs),     std::string(reason::memory_growth)};
  return kTiming.count(code) != 0;
}

// Codes of warning or blocking findings, per code the findings themselves.
std::map<std::string, std::vector<const Finding*>> findings_by_code(const RunResult& run) {
  std::map<std::string, std::vector<const Finding*>> out;
  for (auto& c : run.cells)
    for (auto& f : c.findings)
      if (f.severity != Severity::info) out[f.code].push_back(&f);
  return out;
}

RunResult run_scenario(const Scenario& sc, const std::string& path, const std::string& mutation,
                       const std::string& dir, int jobs, const std::string& self_exe) {
  std::vector<CellSpec> cells = sc.cells;
  if (!mutation.empty())
    for (auto& c : cells) c.flags["NSA_MUTATION"] = mutation;
  fs::create_directories(dir);
  RunResult run = execute_here(sc, cells, execute_options(dir, jobs, self_exe, path));
  // A harness failure is no finding about the model: main() makes it exit 4.
  if (run.completion.end == RunEnd::harness_failure) throw std::runtime_error(run.completion.harness_failure);
  analyze(run);
  render_all(run, dir);
  return run;
}

std::string tests_cell(const TestsVerdict& t) {
  if (!t.ran) return "skipped: " + t.how;
  if (!t.caught) return "MISSED (" + t.how + ")";
  std::string names;
  for (size_t i = 0; i < t.failed.size() && i < 3; ++i) names += (i ? ", " : "") + t.failed[i];
  if (t.failed.size() > 3) names += fmt::format(" (+{})", t.failed.size() - 3);
  return "caught: " + (names.empty() ? t.how : names);
}

std::string scenario_cell(const ScenarioVerdict& s) {
  std::string codes;
  for (auto& [code, fs_] : s.by_code) codes += (codes.empty() ? "" : ", ") + fmt::format("{} ({}×)", code, fs_.size());
  std::string decision(to_string(s.decision));
  if (!s.caught) return "MISSED (" + decision + (codes.empty() ? "" : ": " + codes) + ")";
  return decision + ": " + codes;
}

std::string markdown(const std::vector<Row>& rows, const ScenarioVerdict& clean, const std::string& tests_binary,
                     const std::string& filter, int tests_caught, int scenario_caught) {
  std::string md = "# Mutation self-test\n\n";
  md += fmt::format("Date: {}. Unit tests: `{} --gtest_filter='{}'` with `NSA_MUTATION=<name>`. Scenario: `{}` with "
                    "`NSA_MUTATION=<name>` in every cell's flags; on the clean model it decides **{}**",
                    now_iso8601(), tests_binary.empty() ? "nsa_model_test (not found)" : tests_binary, filter,
                    clean.run.scenario.value("file", ""), to_string(clean.decision));
  std::string clean_codes;
  for (auto& [code, f] : findings_by_code(clean.run)) clean_codes += (clean_codes.empty() ? "" : ", ") + code;
  md += clean_codes.empty() ? ".\n\n" : " (findings: " + clean_codes + "; a mutation must show others).\n\n";
  md += fmt::format("**{} of {} caught by the unit tests, {} of {} by the default scenario.**\n\n", tests_caught,
                    rows.size(), scenario_caught, rows.size());
  md += "| mutation | equation | site | unit tests | default scenario |\n|---|---|---|---|---|\n";
  for (auto& r : rows)
    md += fmt::format("| `{}` | {} | {} | {} | {} |\n", r.m->name, r.m->equation, to_string(r.m->site),
                      tests_cell(r.tests), scenario_cell(r.scenario));
  md += "\n## Each mutation\n";
  for (auto& r : rows) {
    md += fmt::format("\n### `{}`\n\n{} Planted in {}.\n\n", r.m->name, r.m->doc, r.m->plant);
    md += fmt::format("- unit tests: {}", r.tests.how);
    for (size_t i = 0; i < r.tests.failed.size() && i < 3; ++i) md += (i ? ", " : "; failed: ") + r.tests.failed[i];
    md += "\n";
    md += fmt::format("- default scenario: {} (report: `{}/report.md`)\n", to_string(r.scenario.decision), r.scenario.dir);
    for (auto& [code, fs_] : r.scenario.by_code)
      md += fmt::format("  - `{}`: {}{}\n", code, fs_.front()->title,
                        fs_.front()->location.empty() ? "" : " — " + fs_.front()->location);
  }
  return md;
}

}  // namespace

int selftest_mutations(const MutationSelftestOptions& o) {
  // Which mutations: all, or the --mutations=a,b subset (checked against the registry).
  std::vector<const nsa::MutationInfo*> chosen;
  if (o.names.empty() || o.names == "all") {
    for (auto& m : nsa::mutations.rows()) chosen.push_back(&m);
  } else {
    std::stringstream ss(o.names);
    std::string name;
    while (std::getline(ss, name, ',')) {
      if (name.empty()) continue;
      const nsa::MutationInfo* m = nsa::mutations.find(name);
      if (!m) {
        fmt::print(stderr, "selftest: unknown mutation '{}' (known: {})\n", name,
                   nsa::row_names(nsa::mutations.rows()));
        return kInvalidInput;
      }
      chosen.push_back(m);
    }
  }

  const std::string& path = o.scenario_path;
  auto loaded = load_scenario_to_run(path);
  if (!loaded) return kInvalidInput;
  Scenario& sc = *loaded;
  const std::string dir = o.out.empty() ? "runs/selftest-mutations-" + now_compact() : o.out;
  fs::create_directories(dir + "/tests");

  std::vector<Row> rows(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) rows[i].m = chosen[i];

  // (a) The unit tests, `jobs` binaries side by side. Each worker thread spawns,
  // waits for and reaps its own children (child_process.h).
  const auto binary = find_model_test(o.self_exe);
  const std::string filter = o.tests_filter.empty() ? o.default_tests_filter : o.tests_filter;
  if (!binary) {
    for (auto& r : rows)
      r.tests.how = "nsa_model_test not found beside this build (expected <build>/nsa/nsa_model_test; "
                    "build it with NSA_BUILD_TESTS=ON)";
  } else {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < rows.size();) {
        const std::string name(rows[i].m->name);
        fmt::print(stderr, "selftest: unit tests with NSA_MUTATION={}\n", name);
        rows[i].tests = run_model_tests(*binary, filter, name, dir + "/tests/" + name + ".log");
      }
    };
    std::vector<std::thread> pool;
    for (int j = 0; j < std::max(1, o.jobs); ++j) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }

  // (b) The default scenario: once clean, for the findings a healthy model
  // already shows, then once per mutation.
  fmt::print(stderr, "selftest: default scenario, clean\n");
  ScenarioVerdict clean;
  clean.dir = dir + "/scenario/clean";
  clean.run = run_scenario(sc, path, "", clean.dir, o.jobs, o.self_exe);
  clean.decision = clean.run.decision;
  const auto clean_codes = findings_by_code(clean.run);
  for (auto& r : rows) {
    const std::string name(r.m->name);
    fmt::print(stderr, "selftest: default scenario with NSA_MUTATION={}\n", name);
    r.scenario.dir = dir + "/scenario/" + name;
    r.scenario.run = run_scenario(sc, path, name, r.scenario.dir, o.jobs, o.self_exe);
    r.scenario.decision = r.scenario.run.decision;
    bool semantic = false;
    for (auto& [code, fs_] : findings_by_code(r.scenario.run))
      if (!clean_codes.count(code)) r.scenario.by_code[code] = fs_, semantic |= !is_timing(code);
    r.scenario.caught = r.scenario.decision != Decision::go && semantic;
  }

  int tests_caught = 0, scenario_caught = 0;
  for (auto& r : rows) tests_caught += r.tests.caught, scenario_caught += r.scenario.caught;
  const std::string md = markdown(rows, clean, binary.value_or(""), filter, tests_caught, scenario_caught);
  write_file_atomic(dir + "/mutations.md", md);
  fmt::print("{}\nreport: {}/mutations.md\n", md.substr(0, md.find("\n## Each mutation")), dir);
  const bool all = tests_caught == int(rows.size()) && scenario_caught == int(rows.size());
  return all ? 0 : 1;
}

}  // namespace harness::run
