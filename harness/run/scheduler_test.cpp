// The scheduler's ways of ending a cell without a verdict, without a model:
// a child binary that does not exist (a harness failure) and a run cancelled
// before it starts. Neither leaves a result.json that --resume would trust.
#include "harness/run/scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/testing/temp_dir.h"

namespace harness::run {
namespace {
using ::testing::HasSubstr;
using harness::testing::TempDir;

std::vector<CellSpec> cells(int n) {
  std::vector<CellSpec> out;
  for (int i = 0; i < n; ++i) {
    CellSpec c;
    c.id = "cell" + std::to_string(i);
    c.device = "cpu";
    out.push_back(c);
  }
  return out;
}

bool any_result_file(const std::filesystem::path& run_dir) {
  if (!std::filesystem::exists(run_dir / "cells")) return false;
  for (auto& e : std::filesystem::recursive_directory_iterator(run_dir / "cells"))
    if (e.path().filename() == "result.json") return true;
  return false;
}

TEST(Schedule, MissingChildBinaryIsAHarnessFailureNotACrash) {
  harness::testing::TempDir dir;
  auto cs = cells(3);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  auto argv = [](const CellSpec&, const std::string&) {
    return std::vector<std::string>{"/nonexistent/nsa-harness", "cell"};
  };
  Schedule s = schedule_cells(cs, plan_resume(cs, dir.str(), false), argv, o);
  ASSERT_TRUE(s.harness_failure);
  EXPECT_EQ(s.harness_failure->cell, "cell0");
  EXPECT_THAT(s.harness_failure->cause, HasSubstr("/nonexistent/nsa-harness"));
  for (auto& r : s.results) EXPECT_FALSE(r) << "a cell got a verdict: " << r->id;
  EXPECT_FALSE(any_result_file(dir.path()));
}

TEST(Schedule, CancelledBeforeStartRunsNothing) {
  harness::testing::TempDir dir;
  auto cs = cells(2);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  o.cancelled = [] { return true; };
  int launched = 0;
  auto argv = [&](const CellSpec&, const std::string&) {
    ++launched;
    return std::vector<std::string>{"/bin/true"};
  };
  Schedule s = schedule_cells(cs, plan_resume(cs, dir.str(), false), argv, o);
  EXPECT_TRUE(s.cancelled);
  EXPECT_FALSE(s.harness_failure);
  EXPECT_EQ(launched, 0);
  for (auto& r : s.results) EXPECT_FALSE(r);
}

TEST(Schedule, ReusedResultsStandWithoutAProcess) {
  harness::testing::TempDir dir;
  auto cs = cells(1);
  ResumePlan plan;
  ResumeDecision d;
  d.action = ResumeAction::reuse;
  d.reused = CellResult{};
  d.reused->id = "cell0";
  plan.decisions.push_back(d);
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  int launched = 0;
  auto argv = [&](const CellSpec&, const std::string&) {
    ++launched;
    return std::vector<std::string>{"/bin/true"};
  };
  Schedule s = schedule_cells(cs, plan, argv, o);
  ASSERT_TRUE(s.results[0]);
  EXPECT_EQ(s.results[0]->id, "cell0");
  EXPECT_EQ(launched, 0);
}

}  // namespace
}  // namespace harness::run

namespace harness::run {
namespace {

// Runs `cs` three at a time on the faked GPU list `gpus` (INDEX:UUID:NAME,...),
// `per_cell` GPUs per cell, every cell counted as a GPU cell; the test child
// runs `mode_of(cell)` ("pass_env" writes the environment it saw, "hang" hangs).
Schedule run_on_fake_gpus(const std::vector<CellSpec>& cs, const char* gpus, int per_cell, const std::string& dir,
                          std::string (*mode_of)(const CellSpec&)) {
  std::vector<std::string> notes;
  GpuPool pool(narrow_to_visible(parse_fake_gpus(gpus), std::nullopt, notes), per_cell);
  GpuPlacement placement{&pool, [](const CellSpec&) { return true; }, 120};
  supervisor::RunOptions o;
  o.run_dir = dir;
  o.jobs = 3;
  auto argv = [mode_of](const CellSpec& c, const std::string& d) {
    return std::vector<std::string>{NSA_SUPERVISOR_TEST_CHILD, mode_of(c), d};
  };
  return schedule_cells(cs, plan_resume(cs, dir, false), argv, o, placement);
}
std::string pass_env(const CellSpec&) { return "pass_env"; }

// Runs every cell of `cs` at once on the faked GPU list `gpus`, up to
// `cells_per_gpu` cells on one GPU: the test child waits at a barrier until
// all of them run, so each cell's CUDA_VISIBLE_DEVICES is what it held while
// the others ran. Cells compute on a GPU as their `device` says.
Schedule run_at_barrier(const std::vector<CellSpec>& cs, const char* gpus, int cells_per_gpu,
                        const harness::testing::TempDir& dir) {
  const auto barrier = dir.path() / "barrier";
  std::filesystem::create_directories(barrier);
  std::vector<std::string> notes;
  GpuPool pool(narrow_to_visible(parse_fake_gpus(gpus), std::nullopt, notes), 1, cells_per_gpu);
  GpuPlacement placement{&pool, [](const CellSpec& c) { return needs_gpu(c, true); }, 120};
  supervisor::RunOptions o;
  o.run_dir = dir.str();
  o.jobs = static_cast<int>(cs.size());
  o.env = {{"SUPERVISOR_TEST_BARRIER", barrier.string()}, {"SUPERVISOR_TEST_BARRIER_N", std::to_string(cs.size())}};
  auto argv = [](const CellSpec&, const std::string& d) {
    return std::vector<std::string>{NSA_SUPERVISOR_TEST_CHILD, "barrier_env", d};
  };
  return schedule_cells(cs, plan_resume(cs, dir.str(), false), argv, o, placement);
}

// Two fake GPUs, two GPU cells and a CPU cell, all at once.
TEST(ScheduleOnGpus, ConcurrentCellsGetDistinctGpusAndCpuCellsNone) {
  harness::testing::TempDir dir;
  std::vector<CellSpec> cs = cells(3);
  cs[0].device = "cuda";
  cs[1].device = "cuda";
  cs[2].device = "cpu";
  Schedule s = run_at_barrier(cs, "0:GPU-aaa:Fake A,1:GPU-bbb:Fake B", 1, dir);
  ASSERT_FALSE(s.harness_failure) << s.harness_failure->cause;
  std::vector<std::string> seen;
  for (size_t i = 0; i < cs.size(); ++i) {
    SCOPED_TRACE(cs[i].id);
    ASSERT_TRUE(s.results[i]);
    const CellResult& r = *s.results[i];
    EXPECT_EQ(r.outcome, Outcome::pass) << (r.findings.empty() ? "" : r.findings[0].title);
    const std::string cuda = r.probe_tables.at("env")["cuda"];
    const std::string omp = r.probe_tables.at("env")["omp"];
    if (cs[i].device == "cpu") {
      EXPECT_EQ(cuda, "");  // set, and empty: no GPU at all
      EXPECT_TRUE(r.gpus.empty());
      EXPECT_EQ(omp, std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "(unset)");  // takes one itself
      continue;
    }
    // A GPU cell beside two others: a third of the cores (at least one) for its intra-op pool.
    if (!std::getenv("OMP_NUM_THREADS"))
      EXPECT_EQ(omp, std::to_string(std::max(1u, std::thread::hardware_concurrency() / 3u)));
    ASSERT_EQ(r.gpus.size(), 1u);
    EXPECT_EQ(cuda, r.gpus[0].uuid);  // the child saw exactly what the result records
    seen.push_back(cuda);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0], seen[1]);
}

// --gpus-per-cell 2 on four GPUs: each cell holds a whole pair, never half
// of one or a pair another cell holds; the third cell waits for a pair.
// --cells-per-gpu 2 on one GPU: two GPU cells run at once (the barrier waits
// for both), both are shown the same GPU, and each result says it shared it.
TEST(ScheduleOnGpus, CellsPerGpuShareOneGpuAndSaySo) {
  harness::testing::TempDir dir;
  std::vector<CellSpec> cs = cells(2);
  for (auto& c : cs) c.device = "cuda";
  Schedule s = run_at_barrier(cs, "0:GPU-aaa:Fake A", 2, dir);
  ASSERT_FALSE(s.harness_failure) << s.harness_failure->cause;
  for (size_t i = 0; i < cs.size(); ++i) {
    SCOPED_TRACE(cs[i].id);
    ASSERT_TRUE(s.results[i]);
    const CellResult& r = *s.results[i];
    EXPECT_EQ(r.outcome, Outcome::pass) << (r.findings.empty() ? "" : r.findings[0].title);
    EXPECT_EQ(std::string(r.probe_tables.at("env")["cuda"]), "GPU-aaa");
    EXPECT_EQ(r.gpu_sharers, 2);
  }
}

TEST(ScheduleOnGpus, MultiGpuCellsHoldWholeGroups) {
  harness::testing::TempDir dir;
  std::vector<CellSpec> cs = cells(3);
  for (auto& c : cs) c.device = "cuda";
  Schedule s = run_on_fake_gpus(cs, "0:GPU-aaa:A,1:GPU-bbb:B,2:GPU-ccc:C,3:GPU-ddd:D", 2, dir.str(), pass_env);
  ASSERT_FALSE(s.harness_failure);
  for (auto& r : s.results) {
    ASSERT_TRUE(r);
    SCOPED_TRACE(r->id);
    EXPECT_EQ(r->outcome, Outcome::pass);
    ASSERT_EQ(r->gpus.size(), 2u);  // --gpus-per-cell 2: a pair, in the driver's order
    const std::string cuda = r->probe_tables.at("env")["cuda"];
    EXPECT_TRUE(cuda == "GPU-aaa,GPU-bbb" || cuda == "GPU-ccc,GPU-ddd") << cuda;
  }
}

// world_size cells on three faked GPUs: two ranks take two GPUs, one per
// rank (each rank's LOCAL_RANK indexes its own in CUDA_VISIBLE_DEVICES);
// four ranks outnumber the GPUs and share one (Gloo's case); no two cells
// running at once hold the same GPU.
TEST(ScheduleOnGpus, WorldSizeCellsGetAGpuPerRankWhenThereAreEnough) {
  harness::testing::TempDir dir;
  std::vector<CellSpec> cs = cells(3);
  for (auto& c : cs) c.device = "cuda";
  cs[0].train.world_size = 2;
  cs[2].train.world_size = 4;
  Schedule s = run_on_fake_gpus(cs, "0:GPU-aaa:A,1:GPU-bbb:B,2:GPU-ccc:C", 1, dir.str(), pass_env);
  ASSERT_FALSE(s.harness_failure) << s.harness_failure->cause;
  const std::vector<size_t> expected_gpus = {2, 1, 1};
  for (size_t i = 0; i < cs.size(); ++i) {
    SCOPED_TRACE(cs[i].id);
    ASSERT_TRUE(s.results[i]);
    const CellResult& r = *s.results[i];
    EXPECT_EQ(r.outcome, Outcome::pass) << (r.findings.empty() ? "" : r.findings[0].title);
    ASSERT_EQ(r.gpus.size(), expected_gpus[i]);
    std::string uuids;
    for (auto& g : r.gpus) uuids += (uuids.empty() ? "" : ",") + g.uuid;
    EXPECT_EQ(r.probe_tables.at("env")["cuda"], uuids);  // the child saw exactly what the result records
  }
  // Each rank of the two-rank cell saw both GPUs and took the one of its own index.
  std::set<std::string> local_ranks;
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(dir.path() / "cells" / supervisor::cell_dir_name(cs[0].id) / ("rank" + std::to_string(rank)) /
                     "events.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_object() && e.value("name", "") == "env") {
        EXPECT_EQ(e["data"]["cuda"], "GPU-aaa,GPU-bbb");
        local_ranks.insert(e["data"]["local_rank"].get<std::string>());
      }
    }
  }
  EXPECT_EQ(local_ranks, (std::set<std::string>{"0", "1"}));
}

// The times of a cell's events, in order, on the machine's monotonic clock:
// each event's "t" (seconds since its writer started) plus the "mono" the test
// child's start event carries (CLOCK_MONOTONIC, one clock for every process).
std::vector<double> event_times(const TempDir& dir, const std::string& cell_id) {
  std::ifstream in(dir.path() / "cells" / supervisor::cell_dir_name(cell_id) / "events.jsonl");
  std::vector<double> t;
  double origin = 0.0;
  std::string line;
  while (std::getline(in, line)) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object() || !e.contains("t")) continue;
    if (e.value("ev", "") == "start") origin = e.at("mono").get<double>() - e["t"].get<double>();
    t.push_back(e["t"].get<double>());
  }
  for (double& x : t) x += origin;
  return t;
}

// A hung cell holds its own GPU until its watchdog kills it, and only that
// one: the other cells run on the other GPU meanwhile. A cell may get the
// hung cell's GPU before the hung cell started (workers start together, and
// which reaches the GPU first is a race) or once the hang has been declared (a
// busy machine can make the passing cells outlast the 1 s deadline), never
// while the hung cell held it.
TEST(ScheduleOnGpus, AHungCellHoldsOnlyItsOwnGpu) {
  harness::testing::TempDir dir;
  std::vector<CellSpec> cs = cells(3);
  for (auto& c : cs) c.device = "cuda";
  cs[0].watchdog.stall_timeout_s = 1;  // the hang is declared after 1 s of silence
  Schedule s = run_on_fake_gpus(cs, "0:GPU-aaa:A,1:GPU-bbb:B", 1, dir.str(), [](const CellSpec& c) {
    return std::string(c.id == "cell0" ? "hang" : "pass_env");
  });
  ASSERT_FALSE(s.harness_failure);
  ASSERT_TRUE(s.results[0] && s.results[1] && s.results[2]);
  EXPECT_EQ(s.results[0]->outcome, Outcome::hang);
  ASSERT_EQ(s.results[0]->gpus.size(), 1u);
  // Workers start together, so which GPU the hung cell got is a race; that the
  // others never got it while it hung is not.
  const std::string hung_on = s.results[0]->gpus[0].uuid;
  const std::string other = hung_on == "GPU-aaa" ? "GPU-bbb" : "GPU-aaa";
  const std::vector<double> hung_events = event_times(dir, cs[0].id);
  ASSERT_FALSE(hung_events.empty());
  // Silent from its last event on: declared hung no earlier than a deadline later.
  const double hang_declared = hung_events.back() + cs[0].watchdog.stall_timeout_s;
  for (size_t i = 1; i < 3; ++i) {
    SCOPED_TRACE(cs[i].id);
    EXPECT_EQ(s.results[i]->outcome, Outcome::pass);
    const std::string ran_on = s.results[i]->probe_tables.at("env")["cuda"];
    if (ran_on == other) continue;
    EXPECT_EQ(ran_on, hung_on);
    const std::vector<double> t = event_times(dir, cs[i].id);
    ASSERT_FALSE(t.empty());
    if (t.back() <= hung_events.front()) continue;  // done before the hung cell began
    EXPECT_GE(t.front(), hang_declared) << "ran on the hung cell's GPU while the hung cell held it";
  }
}

}  // namespace
}  // namespace harness::run
