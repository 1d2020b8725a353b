#include "harness/scenario/environment.h"

#include <unistd.h>  // environ

#include <algorithm>

#include "nsa/faults.h"
#include "nsa/flags.h"
#include "nsa/name_list.h"

namespace harness {
namespace {

constexpr const char* kFaultVar = "NSA_FAULT";

Diagnostic env_problem(const std::string& name, const std::string& message) {
  Diagnostic d;
  d.file = "environment";
  d.key_path = name;
  d.message = message;
  return d;
}

}  // namespace

EnvironmentSettings read_environment_settings(const std::vector<std::string>& env) {
  EnvironmentSettings out;
  std::vector<Diagnostic> problems;
  for (const auto& kv : env) {
    if (kv.rfind("NSA_", 0) != 0) continue;
    const size_t eq = kv.find('=');
    const std::string name = kv.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (name.rfind("NSA_HARNESS_", 0) == 0) continue;  // the harness's own (revision, config dir)
    const nsa::FlagInfo* info = nsa::find_flag(name);
    if (!info) {
      problems.push_back(env_problem(name, "unknown NSA_* variable in the environment" +
                                               did_you_mean_ranked(nsa::close_flag_matches(name)) +
                                               "; unset it or fix its name (`nsa-harness list flags`)"));
      continue;
    }
    if (auto err = nsa::check_flag_value(*info, value)) {
      problems.push_back(env_problem(name, "bad value in the environment: " + *err));
      continue;
    }
    if (name == kFaultVar) {
      for (auto& f : nsa::split_name_list(value)) {
        if (f == "none") continue;
        if (!nsa::faults.find(f)) {
          problems.push_back(env_problem(name, "unknown fault '" + f + "'" + did_you_mean(f, nsa::faults.names())));
        } else if (std::find(out.faults.begin(), out.faults.end(), f) == out.faults.end()) {
          out.faults.push_back(f);
        }
      }
      continue;
    }
    out.flags[name] = value;
  }
  if (!problems.empty()) throw ScenarioError(std::move(problems));
  return out;
}

EnvironmentSettings read_environment_settings() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return read_environment_settings(env);
}

void apply_environment(const EnvironmentSettings& env, CellSpec& cell) {
  auto note = [&](const std::string& name) {
    if (std::find(cell.from_environment.begin(), cell.from_environment.end(), name) == cell.from_environment.end())
      cell.from_environment.push_back(name);
  };
  for (const auto& [name, value] : env.flags) {
    if (cell.flags.count(name)) continue;  // the scenario's explicit value wins, as in the child
    cell.flags[name] = value;
    note(name);
  }
  for (const auto& f : env.faults) {
    if (std::find(cell.faults.begin(), cell.faults.end(), f) != cell.faults.end()) continue;
    cell.faults.push_back(f);
    note(std::string(kFaultVar) + "=" + f);
  }
}

}  // namespace harness
