#include "harness/analysis/dense_baseline.h"

#include <gtest/gtest.h>

#include <cmath>

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

// No partner, a failed one, another axis: axis_pairs_test.cpp, with the observation cost.

}  // namespace
}  // namespace harness
