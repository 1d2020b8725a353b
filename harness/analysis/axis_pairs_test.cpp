// The tables built from cells that differ in one axis only (axis_pairs.h):
// each gives a row for a pair of passing cells, and nothing for a cell alone,
// a failed partner, or a partner that differs in another axis too.
#include "harness/analysis/axis_pairs.h"

#include <gtest/gtest.h>

#include "harness/analysis/dense_baseline.h"
#include "harness/analysis/observation_cost.h"
#include "harness/testing/results.h"

namespace harness {
namespace {
using testing::make_cell;

struct PairTable {
  const char* name;
  const char* axis;
  const char* value;    // the cell the row is about
  const char* partner;  // the value its partner takes on the axis
  size_t (*rows)(const std::vector<CellResult>&);
};

const PairTable kTables[] = {
    {"DenseBaseline", "attention", "nsa", "dense",
     [](const std::vector<CellResult>& c) { return dense_comparisons(c).size(); }},
    {"ObservationCost", "probes", "all", "none",
     [](const std::vector<CellResult>& c) { return observation_costs(c).size(); }},
};

// A passing cell with every measurement either table reads: throughput, a
// median step, probe time, and five warm steps after a slow first one.
CellResult measured_cell(AxisValues axes) {
  CellResult c = make_cell(std::move(axes), Outcome::pass);
  c.metrics.tok_s = 100.0;
  c.metrics.step_ms_median = 10.0;
  c.metrics.probe_ms_median = 1.0;
  for (double ms : {100.0, 9.8, 9.9, 10.0, 10.1, 10.2}) {
    c.steps.push_back(StepRecord{});
    c.steps.back().step_ms = ms;
  }
  return c;
}

class PairedTable : public ::testing::TestWithParam<PairTable> {};

TEST_P(PairedTable, APairOfPassingCellsGivesOneRow) {
  const PairTable& t = GetParam();
  const std::vector<CellResult> pair = {measured_cell({{"seq_len", "512"}, {t.axis, t.value}}),
                                        measured_cell({{"seq_len", "512"}, {t.axis, t.partner}})};
  EXPECT_EQ(t.rows(pair), 1u);
}

TEST_P(PairedTable, NoPartnerAFailedPartnerOrAnotherAxisGivesNothing) {
  const PairTable& t = GetParam();
  EXPECT_EQ(t.rows({measured_cell({{t.axis, t.value}})}), 0u);
  EXPECT_EQ(t.rows({measured_cell({{t.axis, t.value}}), make_cell({{t.axis, t.partner}}, Outcome::crash, "signal", 2)}), 0u);
  EXPECT_EQ(t.rows({measured_cell({{"a", "1"}, {t.axis, t.value}}), measured_cell({{"a", "2"}, {t.axis, t.partner}})}), 0u);
}

TEST(AxesDiffering, NamesTheOtherAxesThatDifferAndNothingAcrossMatrices) {
  const CellResult a = make_cell({{"attention", "nsa"}, {"seq_len", "512"}, {"NSA_WINDOW_BWD", "ours"}}, Outcome::pass);
  const CellResult b = make_cell({{"attention", "dense"}, {"seq_len", "512"}, {"NSA_WINDOW_BWD", "cudnn"}}, Outcome::pass);
  EXPECT_EQ(axes_differing(a, b, "attention"), std::vector<std::string>{"NSA_WINDOW_BWD"});
  EXPECT_EQ(axes_differing(a, a, "attention"), std::vector<std::string>{});
  EXPECT_EQ(axes_differing(a, make_cell({{"attention", "dense"}, {"seq_len", "512"}}, Outcome::pass), "attention"),
            std::nullopt);
  EXPECT_EQ(axes_differing(a, make_cell({{"attention", "dense"}, {"NSA_WINDOW_BWD", "ours"}, {"seq_len", "512"}},
                                        Outcome::pass),
                           "attention"),
            std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(AxisPairs, PairedTable, ::testing::ValuesIn(kTables),
                         [](const ::testing::TestParamInfo<PairTable>& i) { return std::string(i.param.name); });

// Run-to-run spread from `repeat` cells: the sample standard deviation of
// their median steps over the mean, written out for three runs (100, 102, 104
// ms: σ = 2); a failed run and a cell of other settings do not count; one run,
// or a matrix without `repeat`, tells nothing (0).
TEST(RunToRunSpread, IsTheSampleDeviationOfTheRepeatsMedianSteps) {
  auto timed = [](AxisValues axes, double ms, Outcome o = Outcome::pass) {
    CellResult c = make_cell(std::move(axes), o);
    c.metrics.step_ms_median = ms;
    return c;
  };
  std::vector<CellResult> cells = {timed({{"probes", "none"}, {"repeat", "1"}}, 100.0),
                                   timed({{"probes", "none"}, {"repeat", "2"}}, 102.0),
                                   timed({{"probes", "none"}, {"repeat", "3"}}, 104.0),
                                   timed({{"probes", "none"}, {"repeat", "4"}}, 400.0, Outcome::hang),
                                   timed({{"probes", "all"}, {"repeat", "1"}}, 300.0)};
  EXPECT_NEAR(run_to_run_spread(cells, cells[1]), 2.0 / 102.0, 1e-12);
  EXPECT_EQ(run_to_run_spread(cells, cells[4]), 0.0);  // one run of these settings
  const std::vector<CellResult> plain = {timed({{"probes", "none"}}, 100.0), timed({{"probes", "all"}}, 101.0)};
  EXPECT_EQ(run_to_run_spread(plain, plain[0]), 0.0);
}

}  // namespace
}  // namespace harness
