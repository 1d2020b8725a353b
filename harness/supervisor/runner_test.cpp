#include "harness/supervisor/runner.h"

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "harness/testing/child_helpers.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::test_child;

// A cell whose "mode" axis tells the helper child how to misbehave.
CellSpec cell(const std::string& mode, const std::string& tag = "a") {
  CellSpec c;
  c.axes = {{"mode", mode}, {"tag", tag}};
  c.id = "mode=" + mode + ",tag=" + tag;
  c.train.steps = 4;
  c.watchdog.stall_timeout_s = 1.0;
  c.watchdog.first_step_timeout_s = 10;
  c.watchdog.step_timeout_s = 10;
  return c;
}

ArgvBuilder child_argv(std::atomic<int>* launches = nullptr) {
  return [launches](const CellSpec& c, const std::string& dir) {
    if (launches) ++*launches;
    return std::vector<std::string>{test_child(), c.axes.at(0).second, dir};
  };
}

RunOptions options(const std::string& run_dir, int jobs = 2) {
  RunOptions o;
  o.run_dir = run_dir;
  o.jobs = jobs;
  o.supervisor.kill_grace_s = 1.0;
  o.supervisor.stacks.use_debugger = false;
  o.supervisor.stacks.stack_wait_s = 0.3;
  return o;
}

std::string result_path(const std::string& run_dir, const std::string& id) {
  return run_dir + "/cells/" + cell_dir_name(id) + "/result.json";
}

TEST(CellDirName, ReadableIdsStayAsTheyAre) {
  EXPECT_EQ(cell_dir_name("prefill=sequential,precision=fp16,seq_len=512"),
            "prefill=sequential,precision=fp16,seq_len=512");
}

TEST(CellDirName, UnsafeCharactersReplacedAndDisambiguated) {
  std::string a = cell_dir_name("data=bytes:/tmp/x y");
  std::string b = cell_dir_name("data=bytes:_tmp_x_y");
  EXPECT_EQ(a.rfind("data=bytes__tmp_x_y~", 0), 0u) << a;
  EXPECT_EQ(a.find('/'), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, cell_dir_name("data=bytes:/tmp/x y"));  // stable
  for (const char* bad : {"", ".", "..", "-x"}) {
    std::string n = cell_dir_name(bad);
    EXPECT_NE(n, ".");
    EXPECT_NE(n, "..");
    EXPECT_NE(n[0], '.');
    EXPECT_NE(n[0], '-');
  }
  EXPECT_LE(cell_dir_name(std::string(1000, 'x')).size(), 200u);
}

TEST(RunCells, OneCrashLeavesTheOtherCellsIntact) {
  ScratchDir dir;
  std::vector<CellSpec> cells = {cell("pass", "1"), cell("segv"), cell("hang"), cell("pass", "2")};
  auto results = run_cells(cells, child_argv(), options(dir.path()));
  ASSERT_EQ(results.size(), 4u);
  const std::vector<std::pair<Outcome, std::optional<std::string>>> expected = {
      {Outcome::pass, std::nullopt}, {Outcome::crash, "signal"}, {Outcome::hang, "stall"}, {Outcome::pass, std::nullopt}};
  for (size_t i = 0; i < cells.size(); ++i) {
    SCOPED_TRACE(cells[i].id);
    EXPECT_EQ(results[i].id, cells[i].id);
    EXPECT_EQ(to_string(results[i].outcome), to_string(expected[i].first));
    EXPECT_EQ(results[i].reason, expected[i].second);
    auto stored = load_result(result_path(dir.path(), cells[i].id));
    ASSERT_TRUE(stored) << "result.json missing or unreadable";
    EXPECT_EQ(stored->outcome, results[i].outcome);
    EXPECT_TRUE(fs::exists(dir.path() + "/cells/" + cell_dir_name(cells[i].id) + "/cell.json"));
    EXPECT_FALSE(fs::exists(result_path(dir.path(), cells[i].id) + ".tmp"));
  }
  EXPECT_EQ(results[0].steps_completed, 4);
  // Artifacts are listed relative to the run directory.
  ASSERT_FALSE(results[0].artifacts.empty());
  EXPECT_EQ(results[0].artifacts[0], "cells/" + cell_dir_name(cells[0].id) + "/events.jsonl");
}

TEST(RunCells, ResumeSkipsFinishedCellsAndRerunsBrokenOnes) {
  ScratchDir dir;
  std::vector<CellSpec> cells = {cell("pass", "1"), cell("pass", "2"), cell("pass", "3")};
  std::atomic<int> launches{0};
  run_cells(cells, child_argv(&launches), options(dir.path()));
  EXPECT_EQ(launches, 3);

  fs::remove(result_path(dir.path(), cells[1].id));                        // never finished
  std::ofstream(result_path(dir.path(), cells[2].id)) << "{\"id\": tru";  // half-written
  launches = 0;
  RunOptions o = options(dir.path());
  o.resume = true;
  auto results = run_cells(cells, child_argv(&launches), o);
  EXPECT_EQ(launches, 2);
  for (const auto& r : results) EXPECT_EQ(r.outcome, Outcome::pass) << r.id;
  EXPECT_EQ(results[0].steps_completed, 4);  // read back from disk
}

TEST(RunCells, LaunchFailuresBecomeCrashResults) {
  ScratchDir dir;
  std::vector<CellSpec> cells = {cell("missing"), cell("throws"), cell("pass")};
  ArgvBuilder argv = [](const CellSpec& c, const std::string& d) -> std::vector<std::string> {
    const std::string& mode = c.axes.at(0).second;
    if (mode == "missing") return {d + "/no-such-program"};
    if (mode == "throws") throw std::runtime_error("no executable configured");
    return {test_child(), mode, d};
  };
  auto results = run_cells(cells, argv, options(dir.path(), 1));
  EXPECT_EQ(results[0].outcome, Outcome::crash);
  EXPECT_EQ(results[0].reason, "launch_failed");
  EXPECT_EQ(results[1].outcome, Outcome::crash);
  EXPECT_NE(results[1].findings.at(0).detail.find("no executable configured"), std::string::npos);
  EXPECT_EQ(results[2].outcome, Outcome::pass);
}

TEST(RunCells, DeviceSlotsAndEnvironmentReachTheChild) {
  ScratchDir dir;
  std::vector<CellSpec> cells = {cell("pass_env", "1"), cell("pass_env", "2"), cell("pass_env", "3")};
  RunOptions o = options(dir.path(), 2);
  o.device_slots = {"0", "1"};
  o.env = {{"SUPERVISOR_TEST_VALUE", "hello"}};
  auto results = run_cells(cells, child_argv(), o);
  for (const auto& r : results) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.outcome, Outcome::pass);
    EXPECT_EQ(r.probe_tables.at("env")["value"], "hello");
    std::string cuda = r.probe_tables.at("env")["cuda"];
    EXPECT_TRUE(cuda == "0" || cuda == "1") << cuda;
  }
}

TEST(RunCells, PlainProgressLinesOffATerminal) {
  ScratchDir dir;
  std::ostringstream out;
  RunOptions o = options(dir.path(), 1);
  o.progress = &out;
  o.progress_is_tty = false;
  run_cells({cell("pass", "1"), cell("exit_silent")}, child_argv(), o);
  std::string text = out.str();
  EXPECT_NE(text.find("[1/2] mode=pass,tag=1: pass"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/2] mode=exit_silent,tag=a: crash (exit_nonzero)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(RunCells, CancelledCellsLeaveNoResultForResume) {
  ScratchDir dir;
  RunOptions o = options(dir.path(), 1);
  o.cancelled = [] { return true; };
  auto results = run_cells({cell("hang")}, child_argv(), o);
  EXPECT_EQ(results[0].outcome, Outcome::skip);
  EXPECT_EQ(results[0].reason, "cancelled");
  EXPECT_FALSE(fs::exists(result_path(dir.path(), "mode=hang,tag=a")));
}

}  // namespace
}  // namespace harness::supervisor
