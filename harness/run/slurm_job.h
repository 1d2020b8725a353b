#pragma once
// `nsa-harness slurm`: one matrix on a Slurm cluster as a job array (one task
// per shard, `run --shard $SLURM_ARRAY_TASK_ID/N`) and a merge job that starts
// when the whole array has ended, however its tasks ended
// (--dependency=afterany): a shard that crashed or read NO-GO must still be
// merged, so its cells show as what they were, or as missing.
//
// Every path in a script is shell-quoted. Paths never go into #SBATCH lines
// (sbatch reads those without a shell); the log paths travel on sbatch's
// command line instead.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::run {

// A value an #SBATCH line cannot carry, or an impossible count (bad input: exit 2).
class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SlurmJob {
  std::string harness;      // absolute path of nsa-harness, as the compute nodes reach it
  std::string scenario;     // absolute path of the scenario file
  std::string out_dir;      // absolute: shards write OUT/shard-I, the merge writes OUT
  std::string name;         // the scenario's name, for the job names
  std::optional<std::string> partition;
  std::optional<std::string> time;  // Slurm's time format, e.g. 01:00:00
  int gpus_per_task = 0;    // 0: the tasks ask for no GPU
  int shards = 1;
};

// Throws SlurmError for shards < 1, gpus_per_task < 0, or a partition, time
// or name with characters outside [A-Za-z0-9._:,+-] (the name is cleaned instead).
void check_slurm_job(const SlurmJob& job);

std::string shards_script(const SlurmJob& job);  // the array
std::string merge_script(const SlurmJob& job);   // the merge after it

// Where the scripts and logs go: OUT/slurm/.
std::string slurm_dir(const SlurmJob& job);
std::string shards_script_path(const SlurmJob& job);
std::string merge_script_path(const SlurmJob& job);

// The sbatch command lines, in argv form (for --submit) and as a shell script
// that submits both (submit.sh, for people who submit by hand). The merge's
// line takes the array's id from `array_job_id`.
std::vector<std::string> sbatch_shards_argv(const SlurmJob& job);
std::vector<std::string> sbatch_merge_argv(const SlurmJob& job, const std::string& array_job_id);
std::string submit_script(const SlurmJob& job);

// The job id in `sbatch --parsable` output ("123" or "123;cluster"), else "".
std::string parse_sbatch_job_id(const std::string& output);

struct SubmittedJobs {
  std::string array_job_id;
  std::string merge_job_id;
};

// Submits the array, then the merge depending on it, each sbatch call with a
// deadline. Throws std::runtime_error with sbatch's own words (a harness
// failure: no sbatch, no controller, a refused partition).
SubmittedJobs submit_slurm_job(const SlurmJob& job, double deadline_s);

}  // namespace harness::run
