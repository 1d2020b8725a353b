// results.json: the RunResult through results.h's to_json (top level: scenario,
// decision, platform, cells, … per DESIGN §6), and its way back.
#include <stdexcept>

#include "harness/analysis/dense_baseline.h"
#include "harness/analysis/observation_cost.h"
#include "harness/analysis/repeat_agreement.h"
#include "harness/core/atomic_file.h"
#include "harness/report/render_all.h"
#include "harness/report/report_writer.h"

namespace harness {
namespace {

// The report's comparisons across cells (against dense, observation cost, repeated runs), as typed records, so a reader of
// results.json alone (scripts/perf_section.py, a dashboard) takes the pairing
// the report made instead of re-deriving it. Output only: load_results ignores
// them and the report recomputes them from the cells.
nlohmann::json derived_comparisons(const RunResult& run) {
  return {{"dense_comparisons", dense_comparisons(run.cells)},
          {"observation_costs", observation_costs(run.cells)},
          {"repeat_agreements", repeat_agreements(run.cells)}};
}

}  // namespace

void JsonWriter::write(const RunResult& run, const std::string& dir) {
  nlohmann::json j = run;
  j.update(derived_comparisons(run));
  write_file_atomic(dir + "/" + kResultsFile, j.dump(2) + "\n");
}

RunResult load_results(const std::string& dir) {
  const std::string path = dir + "/" + kResultsFile;
  std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text).get<RunResult>();
  } catch (const std::exception& e) {
    throw std::runtime_error("reading " + path + ": " + e.what());
  }
}

}  // namespace harness
