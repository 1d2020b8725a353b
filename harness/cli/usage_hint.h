#pragma once
// "Did you mean" for the command line: a misspelled subcommand or option is
// named with the closest real ones (edit distance, as for scenario keys).
#include <string>
#include <vector>

namespace CLI { class App; }

namespace harness::cli {

// The first unknown subcommand or long option in `args` (argv without the
// program name) with its suggestions, e.g. "unknown subcommand 'runn' (did you
// mean 'run'?)"; "" when every name is known (the parse failed for another reason).
std::string usage_hint(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace harness::cli
