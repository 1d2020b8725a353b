#include "harness/supervisor/classify_steps.h"

#include <cmath>

#include <gtest/gtest.h>

namespace harness::supervisor {
namespace {
using nlohmann::json;

json step_end_event(int step, double ms, int syncs = 1, json loss = 1.0) {
  return {{"t", 0.0}, {"ev", "step_end"}, {"step", step}, {"loss", loss}, {"step_ms", ms},
          {"tok_s", 1000.0 / ms}, {"skipped", false}, {"host_syncs", syncs}};
}

std::vector<StepRecord> records(const std::vector<double>& ms, const std::vector<int>& syncs = {}) {
  std::vector<json> ev;
  for (size_t i = 0; i < ms.size(); ++i) ev.push_back(step_end_event(static_cast<int>(i), ms[i], syncs.empty() ? 1 : syncs[i]));
  return steps_from_events(ev);
}

TEST(StepsFromEvents, ReadsEveryFieldAndNonFiniteLoss) {
  std::vector<json> ev = {{{"ev", "step_begin"}, {"step", 0}}, step_end_event(0, 10, 3, "nan"), step_end_event(1, 20, 4, nullptr)};
  auto s = steps_from_events(ev);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].step, 0);
  EXPECT_TRUE(std::isnan(s[0].loss));
  EXPECT_TRUE(std::isnan(s[1].loss));
  EXPECT_EQ(s[1].step_ms, 20);
  EXPECT_EQ(s[1].host_syncs, 4);
  EXPECT_DOUBLE_EQ(s[1].tok_s, 50);
}

TEST(Metrics, MediansSkipTheWarmUpStep) {
  // Step 0 (warm-up) is 1000 ms; the others 10, 30, 20 → median 20, max 30.
  std::vector<json> ev = {step_end_event(0, 1000, 1, 4.0), step_end_event(1, 10), step_end_event(2, 30), step_end_event(3, 20, 1, 2.0),
                          {{"ev", "metric"}, {"name", "peak_mem_bytes"}, {"value", 5e8}},
                          {{"ev", "metric"}, {"name", "peak_mem_bytes"}, {"value", 7e8}},
                          {{"ev", "metric"}, {"name", "other"}, {"value", 9e9}}};
  auto m = metrics_from(steps_from_events(ev), ev);
  EXPECT_EQ(m.step_ms_median, 20);
  EXPECT_EQ(m.step_ms_max, 30);
  EXPECT_EQ(m.tok_s, 50);  // 1000/20
  EXPECT_EQ(m.peak_mem_bytes, 7e8);
  EXPECT_EQ(m.first_loss, 4.0);
  EXPECT_EQ(m.last_loss, 2.0);
}

TEST(Metrics, ProbeTimeJoinsItsStepAndSkipsWarmUp) {
  auto probe = [](int step, double ms) { return json{{"ev", "metric"}, {"name", "probe_ms"}, {"step", step}, {"value", ms}}; };
  // The metric follows its step_end; step 0 is warm-up (its 500 ms must not count).
  std::vector<json> ev = {step_end_event(0, 100), probe(0, 500), step_end_event(1, 10), probe(1, 1),
                          step_end_event(2, 10), probe(2, 3), step_end_event(3, 10), probe(3, 2)};
  auto steps = steps_from_events(ev);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].probe_ms, 500);
  EXPECT_EQ(steps[2].probe_ms, 3);
  auto m = metrics_from(steps, ev);
  EXPECT_EQ(m.probe_ms_median, 2);
  EXPECT_FALSE(metrics_from(records({10, 10, 10}), {}).probe_ms_median);  // no probe metric: unset
}

TEST(Metrics, DataTimeIsReadPerStepAndItsMedianSkipsWarmUp) {
  auto with_data = [](int step, json data_ms) {
    json e = step_end_event(step, 10);
    e["data_ms"] = data_ms;
    return e;
  };
  // Step 0 (warm-up) waited 900 ms; the timed steps 4, 1, 0.5 and a non-finite one → median of 4, 1, 0.5 = 1.
  std::vector<json> ev = {with_data(0, 900.0), with_data(1, 4.0), with_data(2, 1.0), with_data(3, "nan"),
                          with_data(4, 0.5)};
  auto steps = steps_from_events(ev);
  ASSERT_EQ(steps.size(), 5u);
  ASSERT_TRUE(steps[0].data_ms && steps[1].data_ms && steps[3].data_ms);
  EXPECT_EQ(*steps[0].data_ms, 900.0);
  EXPECT_EQ(*steps[1].data_ms, 4.0);
  EXPECT_TRUE(std::isnan(*steps[3].data_ms));
  EXPECT_EQ(steps[1].step_ms, 10) << "data_ms is not step time";
  EXPECT_EQ(metrics_from(steps, ev).data_ms_median, 1.0);
  // An older child's step_end has no data_ms: unset, not zero.
  auto old = records({10, 10, 10});
  EXPECT_FALSE(old[1].data_ms);
  EXPECT_FALSE(metrics_from(old, {}).data_ms_median);
}

TEST(Metrics, NoStepsLeavesMetricsUnset) {
  auto m = metrics_from({}, {});
  EXPECT_FALSE(m.tok_s);
  EXPECT_FALSE(m.step_ms_median);
}

TEST(SlowStep, EvenStepsAreNotSlowAndWarmUpIsForgiven) {
  EXPECT_FALSE(find_slow_step(records({90000, 1000, 1100, 900, 1000}), WatchdogSpec{}));
}

TEST(SlowStep, HostSyncsNameTheCause) {
  // Step 5 takes 50× the others and made 2000 host syncs against ~2.
  auto f = find_slow_step(records({10000, 1000, 1000, 1000, 1000, 50000, 1000}, {2, 2, 2, 2, 2, 2000, 2}), WatchdogSpec{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "slow_host_syncs");
  EXPECT_EQ(f->step, 5);
  EXPECT_EQ(f->severity, Severity::blocking);
  EXPECT_EQ(f->evidence["host_syncs"], 2000);
  EXPECT_EQ(f->evidence["median_others_ms"], 1000.0);
}

TEST(SlowStep, FewSyncsIsNotSyncBound) {
  // 40 syncs is under the absolute threshold even though it is 20× the median.
  auto f = find_slow_step(records({10000, 1000, 1000, 1000, 50000, 1000}, {2, 2, 2, 2, 40, 2}), WatchdogSpec{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "slow_step");
}

TEST(SlowStep, GrowthStepOverStep) {
  // 10, 10, 10, 16, 26, 42, 70: three consecutive ≥1.5× growths, the last step > 5× median of the others.
  auto f = find_slow_step(records({1000, 1000, 1000, 1000, 1600, 2600, 4200, 7000}), WatchdogSpec{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "slow_step_growth");
  EXPECT_EQ(f->step, 7);
  EXPECT_EQ(f->evidence["growth_ms"], json({1000, 1600, 2600, 4200, 7000}));
}

TEST(SlowStep, TwoGrowthsAreNotAPattern) {
  // 10 → 16 → 80: only two consecutive growths; the spike is a plain slow step.
  auto f = find_slow_step(records({1000, 1000, 1000, 1000, 1000, 1600, 8000}), WatchdogSpec{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "slow_step");
}

TEST(SlowStep, AStepInsideTheOtherStepsOwnSpreadIsNotSlow) {
  // The other steps swing between 1 s and 5 s (a busy machine): 9 s is 3× their
  // median but well inside 6 × their scaled MAD (~2.8 s).
  WatchdogSpec w;
  w.slow_step_factor = 2;
  EXPECT_FALSE(find_slow_step(records({1000, 1000, 5000, 1200, 4800, 1100, 4900, 9000}), w));
  // The same step against steady neighbours is slow.
  EXPECT_TRUE(find_slow_step(records({1000, 1000, 1000, 1100, 1000, 1000, 1000, 9000}), w));
}

TEST(StepNoise, MedianAndScaledMadOfTheWarmSteps) {
  auto n = step_noise(records({5000, 100, 110, 90, 100, 300}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->steps, 5);
  EXPECT_DOUBLE_EQ(n->median_ms, 100);
  EXPECT_NEAR(n->mad_ms, 1.4826 * 10, 1e-9);
}

TEST(SlowStep, FactorComesFromTheWatchdogSpec) {
  WatchdogSpec w;
  w.slow_step_factor = 2.0;
  EXPECT_TRUE(find_slow_step(records({1000, 10000, 10000, 25000}), w));
  w.slow_step_factor = 3.0;
  EXPECT_FALSE(find_slow_step(records({1000, 10000, 10000, 25000}), w));
}

}  // namespace
}  // namespace harness::supervisor
