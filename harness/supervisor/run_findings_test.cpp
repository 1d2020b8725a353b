// The first-step timeout's finding says whether the child was still working
// (CPU time or kernel launches moving after its last event) and where, from
// the phase stack it wrote at the kill: the probes' start checks at a long
// context were once read as a model that never built.
#include "harness/supervisor/run_findings.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/protocol/events.h"

namespace harness::supervisor {
namespace {

namespace fs = std::filesystem;

SupervisedRun first_step_timeout(const std::string& cell_dir, ProgressSignal last_signal) {
  SupervisedRun run;
  run.cell_dir = cell_dir;
  run.killed_by = KillReason::first_step_timeout;
  run.kill_at_s = 307.9;
  run.since_last_event_s = 189.6;
  run.last_progress_signal = last_signal;
  run.cpu_s_since_last_event = 256.0;
  run.events = {{{"ev", "start"}, {"t", 0.2}}};
  return run;
}

TEST(RunFindings, FirstStepTimeoutSaysTheChildKeptWorking) {
  const fs::path dir = fs::temp_directory_path() / "run_findings_test_working";
  fs::create_directories(dir);
  const Finding busy = watchdog_finding(first_step_timeout(dir.string(), ProgressSignal::launches));
  EXPECT_EQ(busy.code, "first_step_timeout");
  EXPECT_NE(busy.detail.find("The child kept working (its kernel launches moved after that event; 256.0 s of CPU"), std::string::npos)
      << busy.detail;
  // Nothing moved after the last event: no such claim.
  const Finding still = watchdog_finding(first_step_timeout(dir.string(), ProgressSignal::event));
  EXPECT_EQ(still.detail.find("kept working"), std::string::npos) << still.detail;
  fs::remove_all(dir);
}

TEST(RunFindings, FirstStepTimeoutNamesThePhaseOnTheStack) {
  const fs::path dir = fs::temp_directory_path() / "run_findings_test_phase";
  fs::create_directories(dir);
  // What the child's signal handler writes (harness/child/phase_stack.cpp)
  // while the probes' start checks run before step 1.
  std::ofstream(dir / protocol::kStacksFile) << "phase stack: step 0 > the probes' start checks\n";
  SupervisedRun run = first_step_timeout(dir.string(), ProgressSignal::cpu);
  run.stacks.emplace();  // the watchdog asked for stacks before the kill, and they came
  run.stacks->signalled = true;
  run.stacks->stacks_written = true;
  const Finding f = watchdog_finding(run);
  EXPECT_NE(f.location.find("the probes' start checks"), std::string::npos) << f.location;
  EXPECT_NE(f.title.find("the probes' start checks"), std::string::npos) << f.title;
  fs::remove_all(dir);
}

// A step that ran past its deadline with no event for most of it: "kept
// working" only where CPU time or launches moved after the last event; with
// nothing moving since the start, the events-kept-arriving reading stands.
TEST(RunFindings, StepTimeoutSaysKeptWorkingOnlyWhenCpuOrLaunchesMoved) {
  SupervisedRun run;
  run.killed_by = KillReason::step_timeout;
  run.step_in_progress = 3;
  run.step_elapsed_s = 100.0;
  run.since_last_event_s = 80.0;
  run.cpu_s_since_last_event = 75.0;
  run.events = {{{"ev", "start"}, {"t", 0.2}}};
  run.last_progress_signal = ProgressSignal::cpu;
  const Finding busy = watchdog_finding(run);
  EXPECT_NE(busy.detail.find("the child kept working (its CPU time moved last; 75.0 s of CPU"), std::string::npos)
      << busy.detail;
  for (ProgressSignal s : {ProgressSignal::start, ProgressSignal::event}) {
    run.last_progress_signal = s;
    const Finding quiet = watchdog_finding(run);
    EXPECT_EQ(quiet.detail.find("kept working"), std::string::npos) << to_string(s) << ": " << quiet.detail;
    EXPECT_EQ(quiet.evidence["last_progress_signal"], std::string(to_string(s)));
  }
}

}  // namespace
}  // namespace harness::supervisor
