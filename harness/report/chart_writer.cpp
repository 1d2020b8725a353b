// loss.svg and step_time.svg: one line per cell that recorded steps.
#include <functional>

#include "harness/core/atomic_file.h"
#include "harness/report/markdown_report.h"
#include "harness/report/report_writer.h"
#include "harness/report/svg_chart.h"

namespace harness {

namespace {
LineChart chart_of(const RunResult& run, const char* title, const char* y_label,
                   const std::function<double(const StepRecord&)>& value) {
  LineChart chart{title, "step", y_label, {}};
  for (auto& c : run.cells) {
    if (c.steps.empty()) continue;
    ChartSeries s{c.id, {}};
    for (auto& st : c.steps) s.points.emplace_back(st.step, value(st));
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
