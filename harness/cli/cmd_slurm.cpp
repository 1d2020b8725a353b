// `nsa-harness slurm SCENARIO --out DIR …`: writes DIR/slurm/{shards,merge}.sbatch
// and submit.sh (harness/run/slurm_job.h); with --submit, submits both and
// prints the job ids. Bad input (scenario, partition, counts): exit 2; sbatch
// missing or refusing: exit 4.
#include <fmt/core.h>
#include <sys/stat.h>

#include <filesystem>

#include "harness/cli/commands.h"
#include "harness/run/run_support.h"
#include "harness/core/atomic_file.h"
#include "harness/run/slurm_job.h"

namespace harness::cli {
using run::load_scenario_to_run;
namespace {
// sbatch answers at once when the controller is up; a hung controller must not hang us.
constexpr double kSbatchDeadlineS = 60.0;
}  // namespace

int cmd_slurm(const SlurmOptions& o) {
  namespace fs = std::filesystem;
  auto sc = load_scenario_to_run(o.scenario);
  if (!sc) return kExitInvalidInput;
  run::SlurmJob job;
  // Absolute paths: the tasks start wherever Slurm puts them.
  job.harness = fs::absolute(o.self_exe).string();
  job.scenario = fs::absolute(o.scenario).lexically_normal().string();
  job.out_dir = fs::absolute(o.out).lexically_normal().string();
  while (job.out_dir.size() > 1 && job.out_dir.back() == '/') job.out_dir.pop_back();
  job.name = sc->name;
  if (!o.partition.empty()) job.partition = o.partition;
  if (!o.time.empty()) job.time = o.time;
  job.gpus_per_task = o.gpus_per_task;
  job.shards = o.shards;
  try {
    run::check_slurm_job(job);
  } catch (const run::SlurmError& e) {
    fmt::print(stderr, "nsa-harness: slurm: {}\n", e.what());
    return kExitInvalidInput;
  }
  if (static_cast<size_t>(job.shards) > sc->cells.size())
    fmt::print(stderr, "nsa-harness: slurm: note: {} shards for {} cells; {} task(s) will have nothing to run\n",
               job.shards, sc->cells.size(), job.shards - sc->cells.size());

  std::error_code ec;
  fs::create_directories(run::slurm_dir(job), ec);
  if (ec) {
    fmt::print(stderr, "nsa-harness: harness failure: cannot create {}: {}\n", run::slurm_dir(job), ec.message());
    return kExitHarnessFailure;
  }
  const std::string submit_path = run::slurm_dir(job) + "/submit.sh";
  write_file_atomic(run::shards_script_path(job), run::shards_script(job));
  write_file_atomic(run::merge_script_path(job), run::merge_script(job));
  write_file_atomic(submit_path, run::submit_script(job));
  ::chmod(submit_path.c_str(), 0755);
  fmt::print("shards: {} ({} task(s), {} cell(s))\nmerge: {}\nsubmit: {}\n", run::shards_script_path(job), job.shards,
             sc->cells.size(), run::merge_script_path(job), submit_path);
  if (!o.submit) return 0;

  run::SubmittedJobs ids = run::submit_slurm_job(job, kSbatchDeadlineS);  // throws: exit 4 from main
  fmt::print("shards job: {} (array 0-{})\nmerge job: {} (after the array, --dependency=afterany:{})\n"
             "report: {}/report.md once the merge job has run\n",
             ids.array_job_id, job.shards - 1, ids.merge_job_id, ids.array_job_id, job.out_dir);
  return 0;
}

}  // namespace harness::cli
