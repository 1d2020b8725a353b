#include "harness/cli/usage_hint.h"

#include <CLI/CLI.hpp>

#include "harness/scenario/diagnostic.h"

namespace harness::cli {
namespace {

std::vector<std::string> long_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options())
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// "--out=DIR" names the option "--out".
std::string option_name(const std::string& arg) { return arg.substr(0, arg.find('=')); }

std::string unknown_option(const CLI::App& scope, const std::string& arg, const std::string& where) {
  const std::string name = option_name(arg);
  if (scope.get_option_no_throw(name)) return "";
  std::string hint = did_you_mean(name, long_names(scope));
  return "unknown option '" + name + "'" + where + (hint.empty() ? " (see --help)" : hint);
}

}  // namespace

std::string usage_hint(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* scope = &app;
  for (const std::string& arg : args) {
    if (arg == "--") break;  // what follows is positional by convention
    if (arg.rfind("--", 0) == 0) {
      const std::string where = scope == &app ? "" : " for '" + scope->get_name() + "'";
      if (std::string problem = unknown_option(*scope, arg, where); !problem.empty()) return problem;
      continue;
    }
    // The first word that is not an option picks the subcommand; words after it are its arguments.
    if (scope != &app || arg.rfind('-', 0) == 0) continue;
    const auto names = subcommand_names(app);
    if (std::find(names.begin(), names.end(), arg) == names.end()) {
      std::string hint = did_you_mean(arg, names);
      return "unknown subcommand '" + arg + "'" + (hint.empty() ? " (see --help)" : hint);
    }
    scope = app.get_subcommand(arg);
  }
  return "";
}

}  // namespace harness::cli
