#pragma once
// One function per subcommand (one file each); main.cpp wires them to CLI11.
// Each returns the process exit status (DESIGN.md §5–6):
//   0 GO / success, 1 NO-GO, 3 CONDITIONAL GO, 2 invalid input or usage, other = harness failure.
#include <optional>
#include <string>
#include <vector>

#include "harness/run/mutation_selftest.h"

namespace harness::cli {

inline constexpr int kExitInvalidInput = 2;
inline constexpr int kExitHarnessFailure = 4;

struct RunOptions {
  std::string scenario;
  std::string out;          // run directory; empty → runs/<scenario>-<timestamp>
  std::string only;         // --only GLOB
  std::string device;       // --device auto|cpu|cuda (empty: the scenario's)
  int jobs = 1;
  int gpus_per_cell = 1;    // --gpus-per-cell: GPUs each GPU cell holds
  int cells_per_gpu = 1;    // --cells-per-gpu: GPU cells that may share one GPU at a time
  std::string shard;        // --shard I/N; empty: the whole matrix
  bool resume = false;
  bool escalate = true;     // --no-escalate: no re-runs of CUDA crashes
  bool dry_run = false;     // --dry-run: list the cells, run nothing
  std::string rerun_failed; // --rerun-failed DIR: only DIR's cells that did not pass
  std::string self_exe;     // path of this executable (children are spawned from it)
  std::string command_line;
};

int cmd_run(const RunOptions& o);
int cmd_validate(const std::vector<std::string>& files);
int cmd_report(const std::string& dir, const std::string& out_file);
int cmd_compare(const std::string& a, const std::string& b, bool allow_different);
// `flight DIR --cell ID`: the cell's flight recorder (harness/trace/flight_reader.h).
int cmd_flight(const std::string& dir, const std::string& cell, int last);
int cmd_repro(const std::string& dir, const std::string& cell, bool minimize, const std::string& out,
              const std::string& self_exe);
int cmd_selftest(const std::string& self_exe, const std::string& out, int jobs);

// `selftest --mutations[=a,b]`: every mutation (nsa/mutations.h) against the
// model's unit tests and the default scenario; exit 0 only when each is caught by both.
using MutationSelftestOptions = run::MutationSelftestOptions;
int cmd_selftest_mutations(MutationSelftestOptions o);
int cmd_list(const std::string& what);
// `merge DIR... --out DIR`: shards of one matrix into one run (harness/run/merge.h).
int cmd_merge(const std::vector<std::string>& dirs, const std::string& out, const std::string& command_line);

// `slurm SCENARIO --out DIR …`: a shard array and its merge as sbatch scripts (harness/run/slurm_job.h).
struct SlurmOptions {
  std::string scenario;
  std::string out;
  std::string partition;  // empty: the cluster's default
  std::string time;       // empty: the partition's default
  int gpus_per_task = 0;
  int shards = 1;
  bool submit = false;
  std::string self_exe;
};
int cmd_slurm(const SlurmOptions& o);
int cmd_cell(const std::string& spec_file, const std::string& out_dir);

// The scenario `run` uses when none is given.
std::string default_scenario_path();
// Absolute path of the running executable.
std::string self_executable(const char* argv0);

}  // namespace harness::cli
