#include <cmath>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/core/atomic_file.h"
#include "harness/report/render_all.h"
#include "harness/testing/report_fixtures.h"
#include "harness/testing/results.h"
#include "harness/report/report_writer.h"
#include "harness/testing/temp_dir.h"

namespace harness {
namespace {
using ::testing::HasSubstr;

TEST(JsonWriter, TopLevelFieldsFollowTheContract) {
  testing::TempDir dir;
  JsonWriter().write(testing::prefill_hang_run(), dir.str());
  auto j = nlohmann::json::parse(read_file(dir.str() + "/results.json"));
  EXPECT_EQ(j.at("decision"), "CONDITIONAL GO");
  EXPECT_EQ(j.at("scenario").at("name"), "prefill_hang");
  EXPECT_EQ(j.at("platform").at("gpu"), "NVIDIA H200");
  ASSERT_EQ(j.at("cells").size(), 4u);
  const auto& cell = j.at("cells")[0];
  for (const char* key : {"id", "axes", "outcome", "reason", "steps_completed", "metrics", "findings"})
    EXPECT_TRUE(cell.contains(key)) << key;
  EXPECT_EQ(cell.at("id"), "prefill=sequential,seq_len=128");
  EXPECT_EQ(cell.at("outcome"), "hang");
  EXPECT_EQ(cell.at("reason"), "stall");
  EXPECT_TRUE(j.at("cells")[1].at("reason").is_null());
}

// The report's cross-cell comparisons, written for readers of results.json
// alone: NSA ÷ dense and the probes' cost, each against figures set here.
TEST(JsonWriter, WritesTheDenseAndObservationComparisons) {
  RunResult run;
  auto cell = [](AxisValues axes, double tok_s, double step_ms) {
    CellResult c = testing::make_cell(std::move(axes), Outcome::pass);
    c.metrics.tok_s = tok_s;
    c.metrics.step_ms_median = step_ms;
    c.metrics.probe_ms_median = 0.0;
    return c;
  };
  run.cells = {cell({{"attention", "nsa"}, {"probes", "none"}}, 300.0, 40.0),
               cell({{"attention", "dense"}, {"probes", "none"}}, 600.0, 20.0),
               cell({{"attention", "nsa"}, {"probes", "all"}}, 270.0, 44.0)};
  testing::TempDir dir;
  JsonWriter().write(run, dir.str());
  auto j = nlohmann::json::parse(read_file(dir.str() + "/results.json"));
  ASSERT_EQ(j.at("dense_comparisons").size(), 1u);
  const auto& d = j.at("dense_comparisons")[0];
  EXPECT_EQ(d.at("nsa_cell"), run.cells[0].id);
  EXPECT_EQ(d.at("dense_cell"), run.cells[1].id);
  EXPECT_DOUBLE_EQ(d.at("ratio").get<double>(), 300.0 / 600.0);
  ASSERT_EQ(j.at("observation_costs").size(), 1u);
  const auto& o = j.at("observation_costs")[0];
  EXPECT_EQ(o.at("observed_cell"), run.cells[2].id);
  EXPECT_EQ(o.at("bare_cell"), run.cells[0].id);
  EXPECT_NEAR(o.at("cost").get<double>(), 44.0 / 40.0 - 1.0, 1e-12);
  EXPECT_FALSE(o.at("met").get<bool>());  // +10 % against the 3 % goal
  // Output only: reading the file back still gives the run.
  EXPECT_EQ(load_results(dir.str()).cells.size(), 3u);
}

TEST(JsonWriter, RoundTripsThroughLoadResults) {
  testing::TempDir dir;
  for (const RunResult& original : {testing::prefill_hang_run(), testing::fp16_nan_run()}) {
    JsonWriter().write(original, dir.str());
    RunResult back = load_results(dir.str());
    EXPECT_EQ(nlohmann::json(back), nlohmann::json(original));
    // NaN survives as NaN (JSON has none; results.h spells it "nan").
    for (size_t i = 0; i < original.cells.size(); ++i) {
      if (original.cells[i].metrics.last_loss && std::isnan(*original.cells[i].metrics.last_loss)) {
        EXPECT_TRUE(std::isnan(*back.cells[i].metrics.last_loss));
      }
    }
  }
  EXPECT_TRUE(std::isnan(load_results(dir.str()).cells[1].metrics.last_loss.value()));
}

TEST(JsonWriter, RoundTripsEveryTypedCellField) {
  testing::TempDir dir;
  RunResult run = testing::prefill_hang_run();
  CellResult& c = run.cells.front();
  c.flags = {{"NSA_PREFILL_BATCHED", "0"}};
  c.faults = {"causal_leak"};
  c.from_environment = {"NSA_FAULT=causal_leak"};
  GateSpec g;
  g.max_step_ms = 800;
  c.gates = g;
  c.gate_stats = GateStats{6, {LayerGateStats{0, 0.4, 0.35, 0.25, 0.1, 0.0, 0.5, 1.5},
                               LayerGateStats{1, 0.2, 0.3, 0.5, 0.1, 0.0, 0.5, 1.25}}};
  c.trace = testing::trace_summary_fixture();
  c.probe_tables["memory"] = {{"median", 1024}};
  c.step_noise = StepNoise{700, 25, 7};
  c.load = MachineLoad{7.5, 8.1, 2};
  c.confirmation = Confirmation{"slow_step", "slow step 3", "", false, "cells/x/confirm"};
  c.probe_costs = {ProbeCost{"finite", 1.5, 8}, ProbeCost{"gates", 0.25, 8}};
  c.escalation = {EscalationRecord{"launch_blocking", "crash", "cuda_illegal_address", "k<float>", "", "cells/x/e"}};
  c.flight_recorder = FlightRecord{123, {KernelLaunch{"k<float>", 4, "forward/layer 1"}}};
  c.malformed_event_lines = 3;
  c.cuda_graph = CudaGraphRecord{3, 9, 2, ""};
  c.weight_copies = WeightCopiesRecord{0, "switched off (NSA_WEIGHT_COPIES=0)"};
  JsonWriter().write(run, dir.str());
  RunResult back = load_results(dir.str());
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(run));
  const CellResult& b = back.cells.front();
  ASSERT_TRUE(b.gate_stats);
  ASSERT_EQ(b.gate_stats->layers.size(), 2u);
  EXPECT_DOUBLE_EQ(b.gate_stats->layers[0].share_slc, 0.35);
  EXPECT_EQ(b.gate_stats->layers[1].layer, 1);
  ASSERT_TRUE(b.trace);
  EXPECT_EQ(b.trace->kernels.size(), 2u);
  EXPECT_EQ(b.trace->steps[1].stream_syncs, 40);
  EXPECT_EQ(b.probe_tables.at("memory").at("median"), 1024);
  ASSERT_TRUE(b.step_noise && b.load && b.confirmation);
  EXPECT_EQ(b.step_noise->steps, 7);
  EXPECT_DOUBLE_EQ(b.load->end, 8.1);
  EXPECT_EQ(b.confirmation->rerun_dir, "cells/x/confirm");
  ASSERT_EQ(b.probe_costs.size(), 2u);
  EXPECT_EQ(b.probe_costs[1].name, "gates");
  EXPECT_DOUBLE_EQ(b.probe_costs[1].median_ms, 0.25);
  ASSERT_EQ(b.escalation.size(), 1u);
  EXPECT_EQ(b.escalation[0].kernel, "k<float>");
  ASSERT_TRUE(b.flight_recorder);
  EXPECT_EQ(b.flight_recorder->launches, 123u);
  ASSERT_EQ(b.flight_recorder->last.size(), 1u);
  EXPECT_EQ(b.flight_recorder->last[0].step, 4);
  EXPECT_EQ(b.malformed_event_lines, 3);
  ASSERT_TRUE(b.cuda_graph && b.weight_copies);
  EXPECT_EQ(b.cuda_graph->replays, 9);
  EXPECT_EQ(b.weight_copies->tensors, 0);
  EXPECT_EQ(b.weight_copies->off_reason, "switched off (NSA_WEIGHT_COPIES=0)");
  // Typed records are not also kept as untyped notes.
  EXPECT_TRUE(b.extra.empty()) << b.extra.dump();
}

// results.json written before these records had fields kept them under `extra`:
// they are read into the fields and leave `extra`, so the file re-written holds them once.
TEST(JsonWriter, ReadsRecordsAnOlderFileKeptUnderExtra) {
  RunResult run = testing::prefill_hang_run();
  nlohmann::json j = run;
  auto& cell = j["cells"][0];
  cell["extra"]["probe_costs"] = nlohmann::json::array({{{"name", "finite"}, {"median_ms", 1.5}, {"steps", 8}}});
  cell["extra"]["malformed_event_lines"] = 2;
  cell["extra"]["flight_recorder"] = {{"launches", 9}, {"last", nlohmann::json::array()}};
  cell["extra"]["gates"] = {{"step", 6}, {"layers", {{{"layer", 2}, {"share_cmp", 0.5}, {"share_slc", 0.01}}}}};
  cell["extra"]["trace"] = nlohmann::json(testing::trace_summary_fixture());
  cell["extra"]["gates_spec"] = {{"min_branch_share", 0.05}};
  cell["extra"]["precision"] = {{"audit", nlohmann::json::array()}};
  cell["extra"]["note"] = "kept";
  CellResult back = cell.get<CellResult>();
  ASSERT_TRUE(back.gate_stats);
  EXPECT_DOUBLE_EQ(back.gate_stats->layers.at(0).share_slc, 0.01);
  EXPECT_EQ(back.gate_stats->layers.at(0).layer, 2);
  ASSERT_TRUE(back.trace);
  EXPECT_EQ(back.trace->kernel_count, 16u);
  EXPECT_EQ(back.trace->kernel_busy_ns, 2000000u);
  ASSERT_TRUE(back.gates && back.gates->min_branch_share);
  EXPECT_DOUBLE_EQ(*back.gates->min_branch_share, 0.05);
  EXPECT_EQ(back.probe_tables.at("precision"), (nlohmann::json{{"audit", nlohmann::json::array()}}));
  ASSERT_EQ(back.probe_costs.size(), 1u);
  EXPECT_EQ(back.probe_costs[0].steps, 8);
  EXPECT_EQ(back.malformed_event_lines, 2);
  ASSERT_TRUE(back.flight_recorder);
  EXPECT_EQ(back.flight_recorder->launches, 9u);
  EXPECT_EQ(back.extra, (nlohmann::json{{"note", "kept"}}));
}

TEST(JsonWriter, RoundTripsDataTimeAndReadsFilesWithoutIt) {
  testing::TempDir dir;
  RunResult run = testing::prefill_hang_run();
  CellResult& c = run.cells.at(1);
  ASSERT_GE(c.steps.size(), 2u);
  c.metrics.data_ms_median = 0.25;
  c.steps[0].data_ms = 3.5;
  c.steps[1].data_ms = 0.125;
  JsonWriter().write(run, dir.str());
  const CellResult back = load_results(dir.str()).cells.at(1);
  EXPECT_EQ(back.metrics.data_ms_median, 0.25);
  EXPECT_EQ(back.steps[0].data_ms, 3.5);
  EXPECT_EQ(back.steps[1].data_ms, 0.125);
  // A file from before data_ms: no key in the metrics or the steps.
  nlohmann::json j = nlohmann::json::parse(read_file(dir.str() + "/results.json"));
  auto& cell = j["cells"][1];
  ASSERT_TRUE(cell["metrics"].contains("data_ms_median") && cell["steps"][0].contains("data_ms"));
  cell["metrics"].erase("data_ms_median");
  for (auto& s : cell["steps"]) s.erase("data_ms");
  const CellResult old = cell.get<CellResult>();
  EXPECT_FALSE(old.metrics.data_ms_median);
  EXPECT_FALSE(old.steps[0].data_ms);
  EXPECT_EQ(old.metrics.step_ms_median, c.metrics.step_ms_median);
}

TEST(JsonWriter, RoundTripsGpusShardAndMergeRecords) {
  testing::TempDir dir;
  RunResult run = testing::prefill_hang_run();
  run.cells.front().gpus = {GpuDevice{0, "GPU-aaa", "Fake A"}, GpuDevice{1, "GPU-bbb", "Fake B"}};
  run.shard = ShardInfo{1, 2, {"a", "b"}, "h1", "rev1"};
  run.merged_from = {MergeSource{0, "s0", 2}};
  run.completion.end = RunEnd::cells_missing;
  run.completion.not_run = {"c"};
  JsonWriter().write(run, dir.str());
  auto j = nlohmann::json::parse(read_file(dir.str() + "/results.json"));
  EXPECT_EQ(j.at("cells")[0].at("gpus")[1].at("uuid"), "GPU-bbb");
  EXPECT_FALSE(j.at("cells")[1].contains("gpus"));  // none given: no key, as before
  EXPECT_EQ(j.at("shard").at("index"), 1);
  EXPECT_EQ(j.at("run_status"), "cells_missing");
  RunResult back = load_results(dir.str());
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(run));
  ASSERT_TRUE(back.shard);
  EXPECT_EQ(back.shard->matrix_cells, (std::vector<std::string>{"a", "b"}));
}

TEST(LoadResults, NamesTheFileOnBadJson) {
  testing::TempDir dir;
  std::ofstream(dir.str() + "/results.json") << "{\"decision\": \"MAYBE\"}";
  EXPECT_THAT([&] { load_results(dir.str()); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("results.json: unknown decision 'MAYBE'")));
}

TEST(RenderAll, WritesEveryFileAndNoTmp) {
  testing::TempDir dir;
  std::string out = dir.str() + "/run";  // created by render_all
  render_all(testing::prefill_hang_run(), out);
  for (const char* f : {"results.json", "report.md", "junit.xml", "loss.svg", "step_time.svg"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
  EXPECT_TRUE(testing::tmp_files(out).empty());
}

TEST(RenderAll, ReRenderingFromResultsJsonGivesTheSameReport) {
  testing::TempDir dir;
  render_all(testing::fp16_nan_run(), dir.str());
  std::string first = read_file(dir.str() + "/report.md");
  render_all(load_results(dir.str()), dir.str());
  EXPECT_EQ(read_file(dir.str() + "/report.md"), first);
  EXPECT_FALSE(std::filesystem::exists(dir.str() + "/loss.svg"));  // no steps, no charts
}

}  // namespace
}  // namespace harness
