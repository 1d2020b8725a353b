// `nsa-harness report DIR [-o FILE]` and `nsa-harness compare A B`: rendering
// from results.json alone, no run needed. A directory that is no finished run
// is bad input (exit 2, run_dir.h).
#include <fmt/core.h>

#include <filesystem>

#include "harness/analysis/compare.h"
#include "harness/cli/commands.h"
#include "harness/report/compare_report.h"
#include "harness/report/render_all.h"
#include "harness/run/run_dir.h"

namespace harness::cli {

int cmd_report(const std::string& dir, const std::string& out_file) {
  RunResult run = run::load_run_dir(dir);
  render_all(run, dir);
  std::string md = (std::filesystem::path(dir) / "report.md").string();
  if (!out_file.empty() && out_file != md) std::filesystem::copy_file(md, out_file, std::filesystem::copy_options::overwrite_existing);
  fmt::print("{}\n", out_file.empty() ? md : out_file);
  return exit_code_for(run.decision);
}

int cmd_compare(const std::string& a, const std::string& b, bool allow_different) {
  RunResult ra = run::load_run_dir(a), rb = run::load_run_dir(b);
  if (auto why = different_scenarios(ra, rb); why && !allow_different) {
    fmt::print(stderr, "nsa-harness compare: {}; their cells are not comparable (--allow-different compares them "
                       "anyway)\n", *why);
    return kExitInvalidInput;
  }
  Comparison c = compare(ra, rb);
  fmt::print("{}", render_comparison(c, a, b));
  return compare_exit_code(c);
}

}  // namespace harness::cli
