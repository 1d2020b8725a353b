#include "harness/analysis/dense_baseline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/core/stats.h"
#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;

// A passing cell with `n` warm steps of `ms` each (after a slow first step) and tok/s.
CellResult measured(AxisValues axes, double tok_s, double ms, int n = 5) {
  CellResult c = make_cell(std::move(axes), Outcome::pass);
  c.metrics.tok_s = tok_s;
  c.steps.push_back(StepRecord{});
  c.steps.back().step_ms = 10 * ms;
  for (int i = 0; i < n; ++i) {  // ms × 0.98, 0.99, 1.00, 1.01, 1.02: robust σ ≈ 1.5 % of ms
    c.steps.push_back(StepRecord{});
    c.steps.back().step_ms = ms * (1.0 + 0.01 * (i - n / 2));
  }
  return c;
}

TEST(DenseBaseline, PairsCellsThatDifferOnlyInTheAttentionLayer) {
  std::vector<CellResult> cells = {measured({{"seq_len", "512"}, {"attention", "nsa"}}, 100.0, 50),
                                   measured({{"seq_len", "512"}, {"attention", "dense"}}, 400.0, 12.5),
                                   measured({{"seq_len", "1024"}, {"attention", "nsa"}}, 300.0, 30),
                                   measured({{"seq_len", "1024"}, {"attention", "dense"}}, 200.0, 45)};
  auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].nsa_cell, "seq_len=512,attention=nsa");
  EXPECT_EQ(d[0].dense_cell, "seq_len=512,attention=dense");
  EXPECT_DOUBLE_EQ(d[0].ratio, 0.25);
  EXPECT_DOUBLE_EQ(d[1].ratio, 1.5);
  // 1.48 % on each side (1.4826 × a 1 % MAD), in quadrature: 2.1 %.
  EXPECT_NEAR(d[0].noise, std::hypot(0.014826, 0.014826), 1e-4);
}

// window_bwd.yaml's shape: NSA cells with NSA_WINDOW_BWD ours and cudnn_atomic,
// and one dense cell (the scenario excludes the dense cudnn_atomic cell, which
// would run the same program). Both NSA cells get that dense cell.
AxisValues window_bwd(const char* attention, const char* bwd) {
  return {{"attention", attention}, {"probes", "none"}, {"NSA_WINDOW_BWD", bwd}};
}

TEST(DenseBaseline, OneDenseCellIsTheBaselineOfNsaCellsThatDifferInAnNsaLayerOnlyFlag) {
  const std::vector<CellResult> cells = {measured(window_bwd("nsa", "ours"), 60000.0, 50),
                                         measured(window_bwd("nsa", "cudnn_atomic"), 75000.0, 40),
                                         measured(window_bwd("dense", "ours"), 240000.0, 12.5)};
  auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].nsa_cell, "attention=nsa,probes=none,NSA_WINDOW_BWD=ours");
  EXPECT_EQ(d[0].dense_cell, "attention=dense,probes=none,NSA_WINDOW_BWD=ours");
  EXPECT_TRUE(d[0].layer_only_axes.empty());
  EXPECT_DOUBLE_EQ(d[0].ratio, 0.25);
  EXPECT_EQ(d[1].nsa_cell, "attention=nsa,probes=none,NSA_WINDOW_BWD=cudnn_atomic");
  EXPECT_EQ(d[1].dense_cell, "attention=dense,probes=none,NSA_WINDOW_BWD=ours");
  EXPECT_EQ(d[1].layer_only_axes, std::vector<std::string>{"NSA_WINDOW_BWD"});
  EXPECT_DOUBLE_EQ(d[1].nsa_tok_s, 75000.0);
  EXPECT_DOUBLE_EQ(d[1].dense_tok_s, 240000.0);
  EXPECT_DOUBLE_EQ(d[1].ratio, 0.3125);
  EXPECT_NEAR(d[1].noise, std::hypot(0.014826, 0.014826), 1e-4);  // the noise as for an exact pair
}

// backward_choices.yaml's shape: two NSA-layer-only flags crossed, one dense
// cell. Every NSA cell gets it, naming the flags it differs in.
TEST(DenseBaseline, OneDenseCellIsTheBaselineAcrossTwoNsaLayerOnlyFlags) {
  const auto axes = [](const char* attention, const char* bwd, const char* dq) {
    return AxisValues{{"attention", attention}, {"probes", "none"}, {"NSA_WINDOW_BWD", bwd}, {"NSA_SELECTED_DQ", dq}};
  };
  const std::vector<CellResult> cells = {measured(axes("nsa", "ours", "kernel"), 60000.0, 50),
                                         measured(axes("nsa", "ours", "atomic"), 64000.0, 47),
                                         measured(axes("nsa", "cudnn_atomic", "kernel"), 62000.0, 48),
                                         measured(axes("nsa", "cudnn_atomic", "atomic"), 66000.0, 45),
                                         measured(axes("dense", "ours", "kernel"), 240000.0, 12.5)};
  auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 4u);
  const std::vector<std::vector<std::string>> differ = {
      {}, {"NSA_SELECTED_DQ"}, {"NSA_WINDOW_BWD"}, {"NSA_WINDOW_BWD", "NSA_SELECTED_DQ"}};
  for (size_t i = 0; i < d.size(); ++i) {
    SCOPED_TRACE(d[i].nsa_cell);
    EXPECT_EQ(d[i].nsa_cell, cells[i].id);
    EXPECT_EQ(d[i].dense_cell, "attention=dense,probes=none,NSA_WINDOW_BWD=ours,NSA_SELECTED_DQ=kernel");
    EXPECT_EQ(d[i].layer_only_axes, differ[i]);
    EXPECT_DOUBLE_EQ(d[i].ratio, *cells[i].metrics.tok_s / 240000.0);
  }
}

// Every flag of the cell must be one the dense model never reads: the MLP, the
// norms and prefill run in a dense cell too, so a different value there is a
// different dense program, and no baseline.
TEST(DenseBaseline, AFlagTheDenseModelReadsKeepsCellsApart) {
  for (const char* axis : {"NSA_FUSED_MLP", "NSA_FUSED_NORM", "NSA_CUDA_GRAPH", "NSA_PREFILL_BATCHED",
                           "NSA_FORCE_PARITY", "prefill", "seq_len"}) {
    SCOPED_TRACE(axis);
    const std::vector<CellResult> cells = {measured({{"attention", "nsa"}, {axis, "0"}}, 100.0, 50),
                                           measured({{"attention", "dense"}, {axis, "1"}}, 400.0, 12.5)};
    EXPECT_TRUE(dense_comparisons(cells).empty());
  }
  // Nor with an NSA-layer-only flag beside it.
  const std::vector<CellResult> cells = {
      measured({{"attention", "nsa"}, {"NSA_WINDOW_CUDNN", "0"}, {"NSA_FUSED_MLP", "0"}}, 100.0, 50),
      measured({{"attention", "dense"}, {"NSA_WINDOW_CUDNN", "1"}, {"NSA_FUSED_MLP", "1"}}, 400.0, 12.5)};
  EXPECT_TRUE(dense_comparisons(cells).empty());
}

TEST(DenseBaseline, AnExactMatchWinsOverAnEarlierFlagOnlyMatch) {
  // Both dense cells were run (no exclude): the NSA ours cell meets the
  // cudnn_atomic dense cell first, but takes its exact match.
  const std::vector<CellResult> cells = {measured(window_bwd("dense", "cudnn_atomic"), 200000.0, 12.5),
                                         measured(window_bwd("nsa", "ours"), 60000.0, 50),
                                         measured(window_bwd("dense", "ours"), 240000.0, 12.5)};
  auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].dense_cell, "attention=dense,probes=none,NSA_WINDOW_BWD=ours");
  EXPECT_TRUE(d[0].layer_only_axes.empty());
  EXPECT_DOUBLE_EQ(d[0].ratio, 0.25);
}

TEST(DenseBaseline, WithoutAnExactMatchTheFirstPassingFlagOnlyMatchInCellOrder) {
  const std::vector<CellResult> cells = {measured(window_bwd("nsa", "ours"), 60000.0, 50),
                                         make_cell(window_bwd("dense", "ours"), Outcome::crash, "signal", 2),
                                         measured(window_bwd("dense", "cudnn"), 300000.0, 10),
                                         measured(window_bwd("dense", "cudnn_atomic"), 240000.0, 12.5)};
  auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].dense_cell, "attention=dense,probes=none,NSA_WINDOW_BWD=cudnn");
  EXPECT_DOUBLE_EQ(d[0].ratio, 0.2);
}

// No partner, a failed one, another axis: axis_pairs_test.cpp, with the observation cost.

// Two runs of each cell (`repeat: 2`): each side's run-to-run spread (NSA 50
// and 52 ms, dense 12.5 and 12.5), in quadrature, is the ratio's run noise.
TEST(DenseBaseline, RepeatedRunsGiveTheRatioItsRunToRunNoise) {
  std::vector<CellResult> cells = {measured({{"attention", "nsa"}, {"repeat", "1"}}, 100.0, 50),
                                   measured({{"attention", "dense"}, {"repeat", "1"}}, 400.0, 12.5),
                                   measured({{"attention", "nsa"}, {"repeat", "2"}}, 96.0, 52),
                                   measured({{"attention", "dense"}, {"repeat", "2"}}, 400.0, 12.5)};
  for (auto& c : cells) c.metrics.step_ms_median = median(warm_step_ms(c));
  const auto d = dense_comparisons(cells);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].dense_cell, "attention=dense,repeat=1");
  EXPECT_NEAR(d[0].run_noise, std::sqrt(2.0) / 51.0, 1e-12);  // σ of 50, 52 = √2; dense: 0
  EXPECT_NEAR(d[1].run_noise, d[0].run_noise, 1e-12);
  EXPECT_EQ(dense_comparisons({cells[0], cells[1]})[0].run_noise, 0.0);
}

}  // namespace
}  // namespace harness
