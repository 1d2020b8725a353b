// results.json: the RunResult through results.h's to_json (top level: scenario,
// decision, platform, cells, … per DESIGN §6), and its way back.
#include <stdexcept>

#include "harness/core/atomic_file.h"
#include "harness/report/render_all.h"
#include "harness/report/report_writer.h"

namespace harness {

void JsonWriter::write(const RunResult& run, const std::string& dir) {
  nlohmann::json j = run;
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
