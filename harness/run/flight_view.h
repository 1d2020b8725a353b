#pragma once
// `nsa-harness flight`: a cell's flight recorder read back for a person. The
// recorder (flight.bin) keeps every launch with its correlation id but not its
// stream; the cell's trace (trace.json.gz, when tracing was on) has the
// kernels that completed, with their stream. Joined on the correlation id:
// completed launches go under their stream, and a launch the trace has no
// completion for was still in flight when the record stops (the kernel a
// crash or a hang most likely sits in). Without a trace nothing can say which
// launches completed: the launches are shown by the host thread that made them.
#include <map>
#include <string>
#include <vector>

#include "harness/trace/flight_recorder.h"

namespace harness::run {

struct FlightLane {
  std::string label;                       // "stream 7", or "host thread 1234" without a trace
  std::vector<trace::FlightEntry> last;    // oldest first, at most `last` of them
  size_t total = 0;                        // launches of this lane in the ring
};

struct FlightView {
  std::string cell;
  std::string recorder;                    // path of flight.bin
  trace::FlightLog log;
  bool have_trace = false;                 // completions known (trace.json.gz read)
  std::vector<FlightLane> lanes;
  std::vector<trace::FlightEntry> in_flight;  // launched, no completion in the trace; oldest first
};

// Reads <cell_dir>/flight.bin (InputError when the cell has none: it ran
// without the recorder, e.g. on the CPU) and the trace when present.
FlightView read_flight(const std::string& cell_dir, const std::string& cell, int last);

// Correlation id → stream of each kernel the trace recorded as completed.
// Reads a trace cut short by a killed child up to where it ends.
std::map<std::uint32_t, std::uint32_t> completed_kernel_streams(const std::string& trace_path);

// The view as text: a header, in-flight launches first, then each lane.
std::string render_flight(const FlightView& v);

}  // namespace harness::run
