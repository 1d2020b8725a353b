// The Slurm scripts: a shard array, a merge after it, paths shell-quoted.
#include "harness/run/slurm_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace harness::run {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

SlurmJob job() {
  SlurmJob j;
  j.harness = "/opt/nsa/bin/nsa-harness";
  j.scenario = "/data/my scenarios/s.yaml";
  j.out_dir = "/scratch/it's here";
  j.name = "smoke test";
  j.partition = "gpu";
  j.time = "01:00:00";
  j.gpus_per_task = 8;
  j.shards = 4;
  return j;
}

TEST(SlurmScripts, TheArrayRunsOneShardPerTask) {
  const std::string s = shards_script(job());
  EXPECT_THAT(s, HasSubstr("#SBATCH --job-name=nsa-smoke_test\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --array=0-3\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --partition=gpu\n#SBATCH --time=01:00:00\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --gpus-per-task=8\n"));
  EXPECT_THAT(s, HasSubstr("exec '/opt/nsa/bin/nsa-harness' run '/data/my scenarios/s.yaml' --shard \"$shard/4\" "
                           "--out '/scratch/it'\\''s here/shard-'\"$shard\" --jobs 8\n"));
}

TEST(SlurmScripts, TheMergeJoinsEveryShardIntoOut) {
  const std::string s = merge_script(job());
  EXPECT_THAT(s, HasSubstr("#SBATCH --job-name=nsa-smoke_test-merge\n"));
  EXPECT_THAT(s, Not(HasSubstr("--array")));
  EXPECT_THAT(s, HasSubstr("merge '/scratch/it'\\''s here/shard-'0 '/scratch/it'\\''s here/shard-'1 "
                           "'/scratch/it'\\''s here/shard-'2 '/scratch/it'\\''s here/shard-'3 "
                           "--out '/scratch/it'\\''s here'\n"));
}

TEST(SlurmScripts, TheMergeWaitsForTheWholeArrayHoweverItEnded) {
  auto argv = sbatch_merge_argv(job(), "77");
  EXPECT_EQ(argv.at(2), "--dependency=afterany:77");
  const std::string submit = submit_script(job());
  EXPECT_THAT(submit, HasSubstr("--dependency=afterany:\"$array\""));
  EXPECT_THAT(submit, HasSubstr("array=$(sbatch --parsable '--output=/scratch/it'\\''s here/slurm/shard-%a.log' "
                                "'/scratch/it'\\''s here/slurm/shards.sbatch')"));
}

TEST(SlurmScripts, NoGpusAskedWhenNoneWanted) {
  SlurmJob j = job();
  j.gpus_per_task = 0;
  j.partition.reset();
  const std::string s = shards_script(j);
  EXPECT_THAT(s, Not(HasSubstr("--gpus-per-task")));
  EXPECT_THAT(s, Not(HasSubstr("--partition")));
  EXPECT_THAT(s, HasSubstr("--jobs 1\n"));
}

TEST(SlurmScripts, ValuesAnSbatchLineCannotCarryAreRefused) {
  SlurmJob j = job();
  j.partition = "gpu\n#SBATCH --exclusive";
  EXPECT_THROW(check_slurm_job(j), SlurmError);
  j = job();
  j.shards = 0;
  EXPECT_THROW(check_slurm_job(j), SlurmError);
  EXPECT_NO_THROW(check_slurm_job(job()));
}

TEST(SbatchOutput, TheParsableJobId) {
  EXPECT_EQ(parse_sbatch_job_id("1234\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("sbatch: warning: something\n1234;cluster\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("sbatch: error: Batch job submission failed\n"), "");
}

}  // namespace
}  // namespace harness::run
