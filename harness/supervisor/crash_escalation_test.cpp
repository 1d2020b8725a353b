#include "harness/supervisor/crash_escalation.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/supervisor/runner.h"
#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::test_child;

CellSpec crash_cell(const std::string& mode) {
  CellSpec c;
  c.axes = {{"mode", mode}};
  c.id = "mode=" + mode;
  c.train.steps = 2;
  c.watchdog.stall_timeout_s = 5;
  c.watchdog.first_step_timeout_s = 10;
  c.watchdog.step_timeout_s = 10;
  c.expect = nlohmann::json{{"outcome", "crash"}};
  return c;
}

CellResult cuda_crash(const std::string& last_kernel) {
  CellResult r;
  r.id = "mode=cuda_async";
  r.outcome = Outcome::crash;
  r.reason = std::string(reason::cuda_illegal_address);
  Finding f;
  f.code = *r.reason;
  f.severity = Severity::blocking;
  f.title = "CUDA illegal memory access (error 700) after kernel " + last_kernel;
  f.location = "kernel " + last_kernel;
  f.evidence["last_kernel"] = last_kernel;
  r.findings.push_back(f);
  return r;
}

TEST(CrashEscalation, OnlyCudaCrashesEscalate) {
  EXPECT_TRUE(wants_escalation(cuda_crash("k")));
  CellResult r = cuda_crash("k");
  r.reason = std::string(reason::signal);
  EXPECT_FALSE(wants_escalation(r));
  r = cuda_crash("k");
  r.outcome = Outcome::error;  // an exception that merely mentions CUDA is not a crash
  EXPECT_FALSE(wants_escalation(r));
}

TEST(CrashEscalation, PlanWithoutSanitizerIsLaunchBlockingOnly) {
  CellSpec c = crash_cell("cuda_async");
  auto plan = plan_escalation(c, EscalationOptions{});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].env.at("CUDA_LAUNCH_BLOCKING"), "1");
  EXPECT_TRUE(plan[0].argv_prefix.empty());
  EXPECT_FALSE(plan[0].cell.expect.has_value());
  EXPECT_GT(plan[0].cell.watchdog.step_timeout_s, c.watchdog.step_timeout_s);
}

TEST(CrashEscalation, PlanWithSanitizerRunsMemcheckWithoutCachingAllocatorOrTracer) {
  EscalationOptions o;
  o.sanitizer = "/opt/cs/compute-sanitizer";
  o.sanitizer_slowdown = 10;
  CellSpec c = crash_cell("cuda_async");
  auto plan = plan_escalation(c, o);
  ASSERT_EQ(plan.size(), 2u);
  const auto& m = plan[1];
  EXPECT_EQ(m.argv_prefix.front(), o.sanitizer);
  EXPECT_NE(std::find(m.argv_prefix.begin(), m.argv_prefix.end(), "memcheck"), m.argv_prefix.end());
  EXPECT_EQ(m.env.at("PYTORCH_NO_CUDA_MEMORY_CACHING"), "1");
  EXPECT_FALSE(m.cell.probes.at("cupti").enabled);
  EXPECT_EQ(m.drop_env, std::vector<std::string>{"NVTX_INJECTION64_PATH"});
  EXPECT_DOUBLE_EQ(m.cell.watchdog.stall_timeout_s, 10 * c.watchdog.stall_timeout_s);
}

TEST(CrashEscalation, SanitizerKernelWinsOverLaunchBlocking) {
  CellResult r = cuda_crash("later_kernel");
  AttemptResult blocking;
  blocking.attempt.mode = "launch_blocking";
  blocking.attempt.label = "CUDA_LAUNCH_BLOCKING=1";
  blocking.result = cuda_crash("blocking_kernel");
  AttemptResult mem;
  mem.attempt.mode = "memcheck";
  mem.attempt.label = "compute-sanitizer memcheck";
  mem.result = cuda_crash("whatever");
  mem.sanitizer_text =
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at void ns::sanitizer_kernel<float>(P)+0x10 in a.cu:7\n"
      "========= ERROR SUMMARY: 3 errors\n";
  attach_escalation(r, {blocking, mem});
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.location, "kernel sanitizer_kernel<float>");
  EXPECT_EQ(f.title, "CUDA illegal memory access (error 700) in kernel sanitizer_kernel<float> "
                     "(confirmed with compute-sanitizer memcheck)");
  EXPECT_EQ(f.evidence.at("last_kernel_launched"), "later_kernel");
  ASSERT_EQ(f.evidence.at("escalation").size(), 2u);
  EXPECT_EQ(f.evidence.at("escalation")[0].at("kernel"), "blocking_kernel");
  EXPECT_EQ(f.evidence.at("escalation")[1].at("kernel"), "sanitizer_kernel<float>");
  EXPECT_NE(f.detail.find("a.cu:7"), std::string::npos);
  EXPECT_EQ(r.outcome, Outcome::crash);  // escalation says where, never changes what happened
}

TEST(CrashEscalation, CrashThatVanishesWhenBlockingIsCalledTimingDependent) {
  CellResult r = cuda_crash("k");
  AttemptResult blocking;
  blocking.attempt.mode = "launch_blocking";
  blocking.attempt.label = "CUDA_LAUNCH_BLOCKING=1";
  blocking.result.outcome = Outcome::pass;
  attach_escalation(r, {blocking});
  EXPECT_EQ(r.findings.front().location, "kernel k");  // nothing confirmed: the location stays
  EXPECT_NE(r.findings.front().detail.find("did not recur"), std::string::npos);
}

// End to end through real child processes: the helper child names a different
// kernel when launches block, and a stand-in "sanitizer" writes a log and runs
// the command it wraps, as compute-sanitizer does.
TEST(CrashEscalation, ReRunsTheCellAndAttachesToTheSameRow) {
  ScratchDir tmp;
  const std::string run_dir = tmp.path();
  const std::string fake = tmp.path() + "/fake-sanitizer.sh";
  {
    std::ofstream s(fake);
    s << "#!/bin/sh\n"
         "# usage: fake-sanitizer.sh --log-file F --tool memcheck ... CMD...\n"
         "log=''\n"
         "while [ $# -gt 0 ]; do case \"$1\" in\n"
         "  --log-file) log=$2; shift 2;;\n"
         "  --tool|--print-limit) shift 2;;\n"
         "  *) break;;\n"
         "esac; done\n"
         "printf '========= Invalid __global__ read of size 2 bytes\\n"
         "=========     at void nsa::cuda::nsa_window_fwd_kernel<float>(P)+0x1b0 in attention_fwd.cu:95\\n"
         "========= ERROR SUMMARY: 1 error\\n' > \"$log\"\n"
         "exec \"$@\"\n";
  }
  chmod(fake.c_str(), 0755);

  CellSpec cell = crash_cell("cuda_async");
  RunOptions ro;
  ro.run_dir = run_dir;
  ro.supervisor.kill_grace_s = 1.0;
  ro.supervisor.stacks.use_debugger = false;
  ArgvBuilder argv = [](const CellSpec& c, const std::string& dir) {
    return std::vector<std::string>{test_child(), c.axes.at(0).second, dir};
  };
  std::vector<CellResult> results = run_cells({cell}, argv, ro);
  ASSERT_EQ(results[0].outcome, Outcome::crash);
  ASSERT_EQ(results[0].findings.front().evidence.value("last_kernel", ""), "later_kernel");

  EscalationOptions eo;
  eo.sanitizer = fake;
  auto dir_of = [&](const std::string& id) { return run_dir + "/cells/" + cell_dir_name(id); };
  std::vector<std::string> envs_seen;
  AttemptRunner runner = [&](const EscalationAttempt& a, const std::string& adir) {
    RunOptions aro = ro;
    for (auto& [k, v] : a.env) aro.env[k] = v;
    ArgvBuilder wrapped = [&](const CellSpec& c, const std::string& d) {
      auto v = a.argv_prefix;
      for (auto& x : argv(c, d)) v.push_back(x);
      return v;
    };
    envs_seen.push_back(a.mode);
    return run_cell_in_dir(a.cell, wrapped, aro, adir);
  };
  escalate_crashes(results, {cell}, eo, run_dir, dir_of, runner, nullptr);

  EXPECT_EQ(envs_seen, (std::vector<std::string>{"launch_blocking", "memcheck"}));
  const CellResult& r = results[0];
  EXPECT_EQ(r.outcome, Outcome::crash);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.location, "kernel nsa_window_fwd_kernel<float>");
  const auto& rows = r.escalation;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kernel, "faulting_kernel<float>");  // the blocking re-run's own last launch
  EXPECT_EQ(rows[0].outcome, "crash");
  EXPECT_EQ(rows[1].dir, "cells/mode=cuda_async/escalation/memcheck");
  EXPECT_TRUE(fs::exists(dir_of(cell.id) + "/escalation/memcheck/sanitizer.log"));
  // result.json on disk carries the escalation too (so --resume and `report` keep it).
  auto disk = load_result(dir_of(cell.id) + "/result.json");
  ASSERT_TRUE(disk.has_value());
  ASSERT_EQ(disk->escalation.size(), 2u);
  EXPECT_EQ(disk->escalation[1].dir, rows[1].dir);
  EXPECT_TRUE(disk->expect_met.value_or(false));
}

}  // namespace
}  // namespace harness::supervisor
