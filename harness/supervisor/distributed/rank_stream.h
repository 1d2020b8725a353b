#pragma once
// One rank's events (events.jsonl of a world_size > 1 cell's rank) reduced to
// what the distributed analysis compares across ranks: its collectives in seq
// order with their last state, its step timings, its parameter checksums.
// Reads only what the run wrote; never which faults were on.
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/distributed.h"

namespace harness::supervisor::dist {

struct CollectiveEntry {
  CollectiveRef ref;
  std::string state;  // the last one logged: scheduled | started | completed | failed
  double wait_ms = 0.0;
};

struct StepTiming {
  int step = 0;
  double step_ms = 0.0;
  double comm_ms = 0.0;
};

struct RankStream {
  int rank = 0;
  std::string device;                                 // from its start event ("cpu", "cuda:0")
  std::string backend;                                // the process group it ran ("gloo", "nccl")
  std::vector<CollectiveEntry> collectives;           // by seq, ascending
  std::vector<StepTiming> steps;                      // step_end order
  std::map<int, std::pair<double, double>> checksums; // step → (sum, sq), the sampled steps
  int last_step_begun = 0;
  std::string last_phase;                             // innermost phase open at the end ("" none)
  std::optional<double> last_heartbeat_s;
  bool done = false;
};

// Malformed lines and foreign kinds are skipped: a rank killed mid-line still reads.
RankStream read_rank_stream(int rank, std::istream& events);
// Missing file: an empty stream (the rank never started).
RankStream read_rank_stream_file(int rank, const std::string& path);

}  // namespace harness::supervisor::dist
