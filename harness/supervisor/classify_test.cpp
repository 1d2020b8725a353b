#include "harness/supervisor/classify.h"

#include <signal.h>

#include <fstream>

#include <gtest/gtest.h>

#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
using nlohmann::json;
using testing::ScratchDir;
using testing::test_child;

json step_end(int step, double ms, int syncs = 1) {
  return {{"t", 0.0}, {"ev", "step_end"}, {"step", step}, {"loss", 3.0 - 0.1 * step}, {"step_ms", ms},
          {"tok_s", 1000.0}, {"skipped", false}, {"host_syncs", syncs}};
}
json finding(const std::string& code, const std::string& severity, std::optional<int> step) {
  json f{{"code", code}, {"severity", severity}, {"title", code + " title"}};
  f["step"] = step ? json(*step) : json(nullptr);
  return {{"ev", "finding"}, {"finding", f}};
}

CellSpec spec_with_steps(int steps) {
  CellSpec s;
  s.id = "precision=fp16,seq_len=512";
  s.axes = {{"precision", "fp16"}, {"seq_len", "512"}};
  s.train.steps = steps;
  return s;
}

// A clean exit with the given events in between start and done.
SupervisedRun clean_run(std::vector<json> middle) {
  SupervisedRun run;
  run.exit_code = 0;
  run.events.push_back({{"ev", "start"}});
  for (auto& e : middle) run.events.push_back(std::move(e));
  run.events.push_back({{"ev", "done"}});
  return run;
}

TEST(Classify, CleanRunPassesWithStepsMetricsAndProbes) {
  SupervisedRun run = clean_run({step_end(0, 100), step_end(1, 10), step_end(2, 12),
                                 {{"ev", "probe"}, {"name", "memory"}, {"data", {{"v", 1}}}},
                                 {{"ev", "probe"}, {"name", "memory"}, {"data", {{"v", 2}}}},
                                 {{"ev", "probe"}, {"name", "gates"},
                                  {"data", {{"step", 2}, {"layers", {{{"layer", 1}, {"share_slc", 0.25}}}}}}},
                                 finding("gates_constant", "warning", 1)});
  CellResult r = classify(spec_with_steps(3), run);
  EXPECT_EQ(r.outcome, Outcome::pass);
  EXPECT_FALSE(r.reason);
  EXPECT_EQ(r.id, "precision=fp16,seq_len=512");
  EXPECT_EQ(r.steps_completed, 3);
  EXPECT_EQ(r.steps_planned, 3);
  EXPECT_EQ(r.metrics.step_ms_median, 11);
  EXPECT_EQ(r.probe_tables["memory"]["v"], 2);  // the last probe event wins
  ASSERT_TRUE(r.gate_stats);                    // a table the analysis reads lands typed
  ASSERT_EQ(r.gate_stats->layers.size(), 1u);
  EXPECT_EQ(r.gate_stats->layers[0].layer, 1);
  EXPECT_DOUBLE_EQ(r.gate_stats->layers[0].share_slc, 0.25);
  EXPECT_TRUE(r.extra.empty()) << r.extra.dump();
  ASSERT_EQ(r.findings.size(), 1u);     // the warning is kept
  EXPECT_EQ(r.findings[0].code, "gates_constant");
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Classify, FirstBlockingFindingByStepDecidesFail) {
  SupervisedRun run = clean_run({step_end(0, 10), finding("dead_params", "blocking", std::nullopt),
                                 finding("parity", "blocking", 4), finding("non_finite", "blocking", 2),
                                 finding("gates_saturated", "warning", 0), step_end(1, 10)});
  CellResult r = classify(spec_with_steps(2), run);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.reason, "non_finite");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].code, "non_finite");
  EXPECT_EQ(r.findings.size(), 4u);  // every child finding, the decisive one once
}

TEST(Classify, SlowHostSyncsStep) {
  std::vector<json> ev;
  for (int s = 0; s < 8; ++s) ev.push_back(step_end(s, s == 5 ? 50000 : 100, s == 5 ? 4096 : 3));
  CellResult r = classify(spec_with_steps(8), clean_run(ev));
  EXPECT_EQ(r.outcome, Outcome::slow_step);
  EXPECT_EQ(r.reason, "slow_host_syncs");
  EXPECT_EQ(r.findings.at(0).step, 5);
}

TEST(Classify, SlowStepGrowth) {
  std::vector<json> ev;
  double ms = 1000;
  for (int s = 0; s < 8; ++s) ev.push_back(step_end(s, s < 4 ? 1000 : (ms *= 2)));
  CellResult r = classify(spec_with_steps(8), clean_run(ev));
  EXPECT_EQ(r.outcome, Outcome::slow_step);
  EXPECT_EQ(r.reason, "slow_step_growth");
}

TEST(Classify, BlockingFindingOutranksSlowStep) {
  std::vector<json> ev;
  for (int s = 0; s < 6; ++s) ev.push_back(step_end(s, s == 4 ? 100000 : 1000));
  ev.push_back(finding("non_finite", "blocking", 3));
  CellResult r = classify(spec_with_steps(6), clean_run(ev));
  EXPECT_EQ(r.outcome, Outcome::fail);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[1].code, "slow_step");
  EXPECT_EQ(r.findings[1].severity, Severity::warning);
}

TEST(Classify, ExitZeroWithoutDoneIsAProtocolCrash) {
  SupervisedRun run;
  run.exit_code = 0;
  run.events = {{{"ev", "start"}}, step_end(0, 10)};
  CellResult r = classify(spec_with_steps(4), run);
  EXPECT_EQ(r.outcome, Outcome::crash);
  EXPECT_EQ(r.reason, "protocol");
  EXPECT_EQ(r.steps_completed, 1);
}

TEST(Classify, ExternalSigkillNearTheMemoryLimitIsOutOfMemory) {
  SupervisedRun run;
  run.term_signal = SIGKILL;  // no deadline fired: killed_by stays none
  run.peak_rss_bytes = 23ull << 30;
  run.memory_limit_bytes = 24ull << 30;
  run.events = {{{"ev", "start"}}, {{"ev", "step_begin"}, {"step", 1}}, {{"ev", "phase_begin"}, {"name", "forward"}, {"step", 1}}};
  CellResult r = classify(spec_with_steps(4), run);
  EXPECT_EQ(r.outcome, Outcome::crash);
  EXPECT_EQ(r.reason, "out_of_memory");
  const Finding& f = r.findings.at(0);
  EXPECT_EQ(f.title, "killed for host memory: 23.0 GiB resident of 24.0 GiB");
  EXPECT_EQ(f.location, "step 1 / forward");
  EXPECT_EQ(f.evidence["peak_rss_bytes"], 23ull << 30);
  // Far from the limit: killed from outside, not called memory.
  run.peak_rss_bytes = 2ull << 30;
  r = classify(spec_with_steps(4), run);
  EXPECT_EQ(r.reason, "signal");
  EXPECT_EQ(r.findings.at(0).title, "killed by SIGKILL from outside the harness");
  // Our own deadline's kill is a hang, never memory.
  run.peak_rss_bytes = 23ull << 30;
  run.killed_by = KillReason::stall;
  r = classify(spec_with_steps(4), run);
  EXPECT_EQ(r.outcome, Outcome::hang);
}

TEST(Classify, WatchdogStallIsAHangWithThePhaseInProgress) {
  SupervisedRun run;
  run.term_signal = SIGTERM;
  run.killed_by = KillReason::stall;
  run.since_last_event_s = 31.5;
  run.events = {{{"ev", "start"}}, step_end(0, 10), {{"ev", "step_begin"}, {"step", 1}},
                {{"ev", "phase_begin"}, {"name", "forward"}, {"step", 1}},
                {{"ev", "phase_begin"}, {"name", "nsa"}, {"step", 1}, {"layer", 2}}};
  CellResult r = classify(spec_with_steps(4), run);
  EXPECT_EQ(r.outcome, Outcome::hang);
  EXPECT_EQ(r.reason, "stall");
  const Finding& f = r.findings.at(0);
  EXPECT_EQ(f.location, "step 1 / forward / nsa (layer 2)");
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.evidence["seconds_since_last_event"], 31.5);
  EXPECT_EQ(f.evidence["open_phases"].size(), 2u);
}

TEST(Classify, StepTimeoutCarriesTheProgressRate) {
  SupervisedRun run;
  run.term_signal = SIGTERM;
  run.killed_by = KillReason::step_timeout;
  run.step_in_progress = 5;
  run.step_elapsed_s = 120;
  run.step_events = 240;
  run.progress_rate = 2.0;
  run.events = {{{"ev", "start"}}, {{"ev", "step_begin"}, {"step", 5}}};
  CellResult r = classify(spec_with_steps(8), run);
  EXPECT_EQ(r.outcome, Outcome::step_timeout);
  EXPECT_EQ(r.reason, "step_timeout");
  EXPECT_EQ(r.findings.at(0).evidence["progress_rate_per_s"], 2.0);
  EXPECT_EQ(r.findings.at(0).evidence["step_elapsed_s"], 120.0);
}

TEST(Classify, LaunchFailureIsACrashWithTheReason) {
  SupervisedRun run;
  run.launch_error = "cannot run '/x': No such file or directory";
  CellResult r = classify(spec_with_steps(1), run);
  EXPECT_EQ(r.outcome, Outcome::crash);
  EXPECT_EQ(r.reason, "launch_failed");
  EXPECT_EQ(r.findings.at(0).detail, run.launch_error);
}

TEST(Classify, ExpectationMet) {
  EXPECT_TRUE(expectation_met({{"outcome", "hang"}}, Outcome::hang, "stall"));
  EXPECT_TRUE(expectation_met({{"outcome", "hang"}, {"reason", "stall"}}, Outcome::hang, "stall"));
  EXPECT_FALSE(expectation_met({{"outcome", "hang"}, {"reason", "first_step_timeout"}}, Outcome::hang, "stall"));
  EXPECT_FALSE(expectation_met({{"outcome", "pass"}}, Outcome::hang, "stall"));
  CellSpec spec = spec_with_steps(1);
  spec.expect = json{{"outcome", "pass"}};
  CellResult r = classify(spec, clean_run({step_end(0, 10)}));
  EXPECT_EQ(r.expect_met, true);
}

// End to end: the helper child misbehaves, the watchdog watches, classify names it.
struct Case {
  std::string mode;
  Outcome outcome;
  std::optional<std::string> reason;
};

TEST(ClassifyChild, EachMisbehaviourGetsItsOutcome) {
  const std::vector<Case> cases = {
      {"pass", Outcome::pass, std::nullopt},
      {"segv", Outcome::crash, "signal"},
      {"abort", Outcome::crash, "signal"},
      {"sigkill", Outcome::crash, "signal"},
      {"exception", Outcome::error, "exception"},
      {"inplace", Outcome::error, "autograd_inplace"},
      {"cuda", Outcome::crash, "cuda_illegal_address"},
      {"garbage", Outcome::crash, "protocol"},
      {"exit_silent", Outcome::crash, "exit_nonzero"},
      {"hang", Outcome::hang, "stall"},
  };
  WatchdogSpec w;
  w.stall_timeout_s = 1.0;
  SupervisorOptions opt;
  opt.kill_grace_s = 1.0;
  opt.stacks.use_debugger = false;
  opt.stacks.stack_wait_s = 0.3;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode);
    ScratchDir dir;
    ChildLaunch l;
    l.argv = {test_child(), c.mode, dir.path()};
    l.output_path = dir.path() + "/stderr.log";
    l.cell_dir = dir.path();
    CellSpec spec = spec_with_steps(4);
    spec.watchdog = w;
    SupervisedRun run = supervise(l, w, {}, opt);
    CellResult r = classify(spec, run);
    EXPECT_EQ(to_string(r.outcome), to_string(c.outcome));
    EXPECT_EQ(r.reason, c.reason);
    if (c.mode == "segv") {
      EXPECT_EQ(r.findings.at(0).title, "killed by SIGSEGV");
    } else if (c.mode == "sigkill") {
      // Far below any machine's memory: killed from outside, with the peak the watchdog sampled.
      EXPECT_EQ(r.findings.at(0).title, "killed by SIGKILL from outside the harness");
      EXPECT_GE(r.findings.at(0).evidence.value("peak_rss_bytes", std::uint64_t(0)), std::uint64_t(64) << 20);
    } else if (c.mode == "inplace") {
      EXPECT_EQ(r.findings.at(0).evidence.value("op", ""), "SigmoidBackward0");
    } else if (c.mode == "cuda") {
      EXPECT_EQ(r.findings.at(0).location, "kernel nsa_sel_fwd_kernel");
    } else if (c.mode == "pass") {
      EXPECT_EQ(r.steps_completed, 4);
    } else if (c.mode == "hang") {
      EXPECT_EQ(r.findings.at(0).location, "step 1 / forward / nsa (layer 1)");
    }
  }
}

}  // namespace
}  // namespace harness::supervisor
