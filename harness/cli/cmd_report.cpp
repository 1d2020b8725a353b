// `nsa-harness report DIR [-o FILE]` and `nsa-harness compare A B`: rendering
// from results.json alone, no run needed.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>

#include "harness/analysis/compare.h"
#include "harness/cli/commands.h"
#include "harness/report/compare_report.h"
#include "harness/report/render_all.h"

namespace harness::cli {

int cmd_report(const std::string& dir, const std::string& out_file) {
  RunResult run = load_results(dir);
  render_all(run, dir);
  std::string md = (std::filesystem::path(dir) / "report.md").string();
  if (!out_file.empty() && out_file != md) std::filesystem::copy_file(md, out_file, std::filesystem::copy_options::overwrite_existing);
  fmt::print("{}\n", out_file.empty() ? md : out_file);
  return exit_code_for(run.decision);
}

int cmd_compare(const std::string& a, const std::string& b) {
  RunResult ra = load_results(a), rb = load_results(b);
  Comparison c = compare(ra, rb);
  fmt::print("{}", render_comparison(c, a, b));
  return compare_exit_code(c);
}

}  // namespace harness::cli
