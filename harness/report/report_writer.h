#pragma once
// Report writers behind one interface (STYLE "Runs as values"): each renders a
// RunResult into one or more files of a run directory, atomically. Writers
// only render; every fact comes from the RunResult.
#include <memory>
#include <string>
#include <vector>

#include "harness/core/results.h"

namespace harness {

class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  virtual const char* name() const = 0;  // "markdown", "json", "junit", "charts"
  // Writes into `dir` (which must exist). Throws std::runtime_error with the path on failure.
  virtual void write(const RunResult& run, const std::string& dir) = 0;
};

class MarkdownWriter : public ReportWriter {  // report.md
 public:
  const char* name() const override { return "markdown"; }
  void write(const RunResult& run, const std::string& dir) override;
};

class JsonWriter : public ReportWriter {  // results.json
 public:
  const char* name() const override { return "json"; }
  void write(const RunResult& run, const std::string& dir) override;
};

class JunitWriter : public ReportWriter {  // junit.xml
 public:
  const char* name() const override { return "junit"; }
  void write(const RunResult& run, const std::string& dir) override;
};

class ChartWriter : public ReportWriter {  // loss.svg, step_time.svg (when any cell has steps)
 public:
  const char* name() const override { return "charts"; }
  void write(const RunResult& run, const std::string& dir) override;
};

// All four, in the order render_all runs them (results.json first: it is the
// source the others can be re-rendered from).
std::vector<std::unique_ptr<ReportWriter>> all_writers();

inline constexpr const char* kReportFile = "report.md";
inline constexpr const char* kResultsFile = "results.json";
inline constexpr const char* kJunitFile = "junit.xml";
inline constexpr const char* kLossChartFile = "loss.svg";
inline constexpr const char* kStepTimeChartFile = "step_time.svg";

}  // namespace harness
