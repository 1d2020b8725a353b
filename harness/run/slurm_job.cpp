#include "harness/run/slurm_job.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "harness/core/text.h"
#include "harness/run/tool_command.h"

namespace harness::run {
namespace {

bool sbatch_safe(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._:,+-").find(c) != std::string_view::npos;
}

void check_value(const char* option, const std::optional<std::string>& v) {
  if (!v) return;
  if (v->empty() || !std::all_of(v->begin(), v->end(), sbatch_safe))
    throw SlurmError(fmt::format("{} '{}': only letters, digits and ._:,+- can go into an #SBATCH line", option, *v));
}

std::string job_name(const SlurmJob& job, const char* suffix) {
  std::string n = "nsa-" + job.name;
  for (char& c : n)
    if (!sbatch_safe(c)) c = '_';
  return n + suffix;
}

std::string common_header(const SlurmJob& job, const char* suffix) {
  std::string s = "#!/bin/bash\n";
  s += "#SBATCH --job-name=" + job_name(job, suffix) + "\n";
  if (job.partition) s += "#SBATCH --partition=" + *job.partition + "\n";
  if (job.time) s += "#SBATCH --time=" + *job.time + "\n";
  s += "#SBATCH --ntasks=1\n";
  return s;
}

std::string shard_dir_word(const SlurmJob& job) { return shell_quote(job.out_dir + "/shard-"); }

}  // namespace

void check_slurm_job(const SlurmJob& job) {
  if (job.shards < 1) throw SlurmError(fmt::format("--shards {}: at least 1", job.shards));
  if (job.gpus_per_task < 0) throw SlurmError(fmt::format("--gpus-per-task {}: 0 or more", job.gpus_per_task));
  check_value("--partition", job.partition);
  check_value("--time", job.time);
}

std::string slurm_dir(const SlurmJob& job) { return job.out_dir + "/slurm"; }
std::string shards_script_path(const SlurmJob& job) { return slurm_dir(job) + "/shards.sbatch"; }
std::string merge_script_path(const SlurmJob& job) { return slurm_dir(job) + "/merge.sbatch"; }

std::string shards_script(const SlurmJob& job) {
  std::string s = common_header(job, "");
  s += fmt::format("#SBATCH --array=0-{}\n", job.shards - 1);
  if (job.gpus_per_task > 0) s += fmt::format("#SBATCH --gpus-per-task={}\n", job.gpus_per_task);
  s += "# One slice of the matrix per array task; Slurm sets CUDA_VISIBLE_DEVICES to the task's GPUs and\n"
       "# `run` gives each of them to one cell at a time.\n";
  s += "set -eu\n";
  s += "shard=\"$SLURM_ARRAY_TASK_ID\"\n";
  s += fmt::format("exec {} run {} --shard \"$shard/{}\" --out {}\"$shard\" --jobs {}\n", shell_quote(job.harness),
                   shell_quote(job.scenario), job.shards, shard_dir_word(job), std::max(1, job.gpus_per_task));
  return s;
}

std::string merge_script(const SlurmJob& job) {
  std::string s = common_header(job, "-merge");
  s += "# Runs after every array task has ended, whatever its exit status (afterany): cells of a shard that\n"
       "# never finished are reported missing, never as passed.\n";
  s += "set -eu\n";
  s += "exec " + shell_quote(job.harness) + " merge";
  for (int i = 0; i < job.shards; ++i) s += " " + shard_dir_word(job) + std::to_string(i);
  s += " --out " + shell_quote(job.out_dir) + "\n";
  return s;
}

std::vector<std::string> sbatch_shards_argv(const SlurmJob& job) {
  return {"sbatch", "--parsable", "--output=" + slurm_dir(job) + "/shard-%a.log", shards_script_path(job)};
}

std::vector<std::string> sbatch_merge_argv(const SlurmJob& job, const std::string& array_job_id) {
  return {"sbatch", "--parsable", "--dependency=afterany:" + array_job_id, "--output=" + slurm_dir(job) + "/merge.log",
          merge_script_path(job)};
}

std::string submit_script(const SlurmJob& job) {
  auto line = [](const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + shell_word(a);
    return s;
  };
  std::string s = "#!/bin/sh\n# Submits the shard array, then the merge that waits for all of it.\nset -eu\n";
  s += "array=$(" + line(sbatch_shards_argv(job)) + ")\n";
  s += "array=${array%%;*}\n";
  s += "merge=$(" + line(sbatch_merge_argv(job, "ARRAY")) + ")\n";
  // The placeholder keeps sbatch_merge_argv the one source of the merge's options.
  const std::string placeholder = "afterany:ARRAY";
  const size_t at = s.find(placeholder);
  s.replace(at, placeholder.size(), "afterany:\"$array\"");
  s += "echo \"shards: job $array (array 0-" + std::to_string(job.shards - 1) + ")\"\n";
  s += "echo \"merge: job ${merge%%;*}\"\n";
  return s;
}

std::string parse_sbatch_job_id(const std::string& output) {
  for (const std::string& raw : split(output, '\n')) {
    std::string line = trim(raw);
    line = line.substr(0, line.find(';'));
    if (!line.empty() && std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return line;
  }
  return "";
}

SubmittedJobs submit_slurm_job(const SlurmJob& job, double deadline_s) {
  auto submit = [&](const std::vector<std::string>& argv, const char* what) {
    ToolOutput out = run_tool(argv, deadline_s);
    const std::string id = out.ok() ? parse_sbatch_job_id(out.output) : "";
    if (id.empty())
      throw std::runtime_error(fmt::format("sbatch for the {}: {}", what,
                                           out.ok() ? "no job id in its output: " + trim(out.output)
                                                    : out.failure_text(deadline_s)));
    return id;
  };
  SubmittedJobs jobs;
  jobs.array_job_id = submit(sbatch_shards_argv(job), "shard array");
  jobs.merge_job_id = submit(sbatch_merge_argv(job, jobs.array_job_id), "merge job");
  return jobs;
}

}  // namespace harness::run
