// `nsa-harness flight DIR --cell ID [--last N]`: what a cell's flight recorder
// (flight.bin, harness/trace/flight_recorder.h) says, read back after the fact.
#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/run/flight_view.h"
#include "harness/run/run_dir.h"

namespace harness::cli {

int cmd_flight(const std::string& dir, const std::string& cell, int last) {
  const RunResult run = run::load_run_dir(dir);
  run::find_cell_or_throw(run, dir, cell);
  fmt::print("{}", run::render_flight(run::read_flight(run::cell_dir(dir, cell), cell, last)));
  return 0;
}

}  // namespace harness::cli
