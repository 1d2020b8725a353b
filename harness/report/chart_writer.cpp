// loss.svg and step_time.svg: one line per cell that recorded steps, and a
// marker at the step a cell hung or crashed in (also for a cell that died
// before its first step ended: its marker is all there is to draw).
#include <functional>

#include "harness/analysis/judgement.h"
#include "harness/core/atomic_file.h"
#include "harness/report/markdown_report.h"
#include "harness/report/report_writer.h"
#include "harness/report/svg_chart.h"

namespace harness {

namespace {
// Outcomes that stop a cell inside a step: the chart marks where.
bool stops_in_a_step(Outcome o) {
  return o == Outcome::hang || o == Outcome::crash || o == Outcome::step_timeout || o == Outcome::error;
}

LineChart chart_of(const RunResult& run, const char* title, const char* y_label,
                   const std::function<double(const StepRecord&)>& value) {
  LineChart chart{title, "step", y_label, {}, true};
  for (auto& c : run.cells) {
    const bool stopped = stops_in_a_step(c.outcome);
    if (c.steps.empty() && !stopped) continue;
    ChartSeries s{c.id, {}, std::nullopt, ""};
    for (auto& st : c.steps) s.points.emplace_back(st.step, value(st));
    if (stopped) {
      // The step it was in: the deciding finding's when it names one, else the one after the last that ended.
      const Judgement j = judge(c);
      const int last = c.steps.empty() ? 0 : c.steps.back().step;
      s.failed_at = j.deciding && j.deciding->step && *j.deciding->step > 0 ? *j.deciding->step : last + 1;
      s.failure = std::string(to_string(c.outcome));
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}
}  // namespace

void ChartWriter::write(const RunResult& run, const std::string& dir) {
  if (!has_step_data(run)) return;
  write_file_atomic(dir + "/" + kLossChartFile,
                    render_svg(chart_of(run, "Loss per step", "loss", [](const StepRecord& s) { return s.loss; })));
  write_file_atomic(dir + "/" + kStepTimeChartFile,
                    render_svg(chart_of(run, "Step time per step", "step time (ms)",
                                        [](const StepRecord& s) { return s.step_ms; })));
}

}  // namespace harness
