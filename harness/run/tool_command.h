#pragma once
// Runs a short external tool (nvidia-smi, sbatch) and reads what it printed,
// with a deadline: a wedged driver or an unreachable Slurm controller must
// not hang the harness. The tool runs in its own process group (the
// supervisor's ChildProcess), so a timeout kills everything it started.
#include <optional>
#include <string>
#include <vector>

namespace harness::run {

struct ToolOutput {
  bool started = false;           // false: not found or not executable (`error` says which)
  bool timed_out = false;         // killed at the deadline
  std::optional<int> exit_code;   // unset when killed by a signal or not started
  std::string output;             // stdout and stderr, interleaved as written
  std::string error;              // why it did not start

  bool ok() const { return started && !timed_out && exit_code == 0; }
  // One line for a message: "exit 1: <last line of output>", "no answer in 10 s", "not found".
  std::string failure_text(double deadline_s) const;
};

// `argv[0]` is a path or a name on PATH. Never throws.
ToolOutput run_tool(const std::vector<std::string>& argv, double deadline_s);

}  // namespace harness::run
