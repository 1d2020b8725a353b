#pragma once
// What the terminal shows while a matrix runs, rendered from a typed record
// (no clock, no terminal inside: tests render to a string).
//
//   live (a TTY, neither CI nor NO_COLOR set): a block redrawn in place —
//     [3/12] ✓ 2 pass · ✗ 1 failed · 2 running · ETA 1m20s
//       ▶ prefill=batched,precision=fp32   step 3/6   12.4 s
//     last: prefill=sequential,precision=bf16 → hang (stall)
//   plain (a pipe, a log, CI): one line per event, written by RunProgress.
//
// The ETA is the mean wall time of the cells finished in this run (resumed
// ones took no time here) times the work left, spread over the job slots; none
// before the first cell finishes.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness::supervisor {

struct RunningCell {
  std::string id;
  int step = 0;           // last step_end seen; 0 before the first
  int steps_planned = 0;  // 0: unknown
  double elapsed_s = 0.0;
};

struct ProgressRecord {
  int total = 0;
  int finished = 0;  // with a result, resumed ones included
  int failed = 0;    // finished with a failure outcome
  int jobs = 1;
  std::map<std::string, int> by_outcome;  // "pass" → 3
  std::vector<RunningCell> running;
  std::vector<double> durations_s;  // each cell finished in this run
  std::string last;                 // the latest event, "id → hang (stall)"
};

// Seconds left, or nothing while no cell has finished in this run.
std::optional<double> eta_s(const ProgressRecord& p);

// "1m20s", "45s", "2h03m".
std::string duration_text(double seconds);

// The live block, one line per '\n'; `color` adds ANSI colours to the counts.
std::string render_live(const ProgressRecord& p, bool color);

// Live view only on a terminal, and not in CI or with NO_COLOR set
// (https://no-color.org): there one plain line per event reads better.
bool wants_live_view(bool is_tty, const char* ci_env, const char* no_color_env);

// The table printed when the run ends (both modes): one row per cell, then
// the decision.
std::string render_summary_table(const RunResult& run);

}  // namespace harness::supervisor
