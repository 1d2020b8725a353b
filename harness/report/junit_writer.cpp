#include "harness/report/junit_writer.h"

#include <fmt/format.h>

#include "harness/analysis/judgement.h"
#include "harness/core/atomic_file.h"
#include "harness/report/report_writer.h"
#include "harness/report/text_format.h"

namespace harness {

std::string render_junit(const RunResult& run) {
  int failures = 0, skipped = 0;
  for (auto& c : run.cells) {
    Judgement j = judge(c);
    failures += j.kind == Judgement::Kind::fail;
    skipped += j.kind == Judgement::Kind::skip;
  }
  std::string suite = run.scenario.is_object() ? run.scenario.value("name", "") : "";
  if (suite.empty()) suite = "nsa-harness";
  // Cells missing from every shard of a merge are errors of the run, not passes a CI would count as green.
  const std::vector<std::string> missing =
      run.completion.end == RunEnd::cells_missing ? run.completion.not_run : std::vector<std::string>{};
  const std::string counts = fmt::format(R"(tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3f}")",
                                         run.cells.size() + missing.size(), failures, missing.size(), skipped,
                                         run.wall_s);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format("<testsuites name=\"nsa-harness\" {}>\n", counts);
  s += fmt::format("  <testsuite name=\"{}\" {}", xml_escape(suite), counts);
  if (!run.started_at.empty()) s += fmt::format(" timestamp=\"{}\"", xml_escape(run.started_at));
  s += ">\n";
  for (auto& c : run.cells) {
    s += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape(suite),
                     xml_escape(c.id), c.wall_s);
    Judgement j = judge(c);
    const std::string title = j.deciding ? j.deciding->title : "";
    if (j.kind == Judgement::Kind::pass) {
      s += "/>\n";
      continue;
    }
    s += ">\n";
    if (j.kind == Judgement::Kind::skip) {
      s += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(j.reason + (title.empty() ? "" : ": " + title)));
    } else {
      std::string message = fmt::format("{} ({})", j.outcome, j.reason) + (title.empty() ? "" : ": " + title);
      std::string body;
      if (j.deciding) {
        if (j.deciding->step) body += fmt::format("step {}\n", *j.deciding->step);
        if (!j.deciding->location.empty()) body += "location: " + j.deciding->location + "\n";
        body += j.deciding->detail;
      }
      if (!c.repro_command.empty()) body += (body.empty() ? "" : "\n") + std::string("repro: ") + c.repro_command;
      s += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", xml_escape(j.reason),
                       xml_escape(message), xml_escape(body));
    }
    s += "    </testcase>\n";
  }
  for (auto& id : missing)
    s += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0.000\">\n      <error type=\"missing\" "
                     "message=\"missing: in no shard that was merged\"/>\n    </testcase>\n",
                     xml_escape(suite), xml_escape(id));
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

void JunitWriter::write(const RunResult& run, const std::string& dir) {
  write_file_atomic(dir + "/" + kJunitFile, render_junit(run));
}

}  // namespace harness
