#pragma once
// A crashed or killed CUDA cell leaves its last kernel launches in the flight
// recorder's file (<cell dir>/flight.bin): the deciding finding names the
// kernel in flight, and the file joins the cell's artifacts.
#include <string>

#include "harness/core/results.h"

namespace harness::run {

void attach_flight_recorder(CellResult& r, const std::string& cell_dir, const std::string& run_dir);

}  // namespace harness::run
