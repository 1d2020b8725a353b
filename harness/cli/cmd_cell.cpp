// `nsa-harness cell --spec DIR/cell.json --out DIR`: the child side of one cell.
#include <fstream>

#include "harness/child/cell_runner.h"
#include "harness/cli/commands.h"

namespace harness::cli {

int cmd_cell(const std::string& spec_file, const std::string& out_dir) {
  std::ifstream in(spec_file);
  if (!in) throw std::runtime_error("cannot read cell spec " + spec_file);
  CellSpec spec = nlohmann::json::parse(in).get<CellSpec>();
  return child::run_cell(spec, out_dir);
}

}  // namespace harness::cli
