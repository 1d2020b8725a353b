#include "harness/report/render_all.h"

#include <filesystem>
#include <stdexcept>

#include "harness/report/report_writer.h"

namespace harness {

std::vector<std::unique_ptr<ReportWriter>> all_writers() {
  std::vector<std::unique_ptr<ReportWriter>> w;
  w.push_back(std::make_unique<JsonWriter>());
  w.push_back(std::make_unique<JunitWriter>());
  w.push_back(std::make_unique<ChartWriter>());
  w.push_back(std::make_unique<MarkdownWriter>());
  return w;
}

void render_all(const RunResult& run, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create report directory " + dir + ": " + ec.message());
  for (auto& writer : all_writers()) {
    try {
      writer->write(run, dir);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("writing the ") + writer->name() + " report: " + e.what());
    }
  }
}

}  // namespace harness
