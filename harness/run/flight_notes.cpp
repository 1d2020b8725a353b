#include "harness/run/flight_notes.h"

#include <filesystem>

#include "harness/core/kernel_name.h"
#include "harness/trace/flight_recorder.h"

namespace harness::run {

void attach_flight_recorder(CellResult& r, const std::string& cell_dir, const std::string& run_dir) {
  std::string path = cell_dir + "/" + trace::kFlightRecorderFile;
  if (!std::filesystem::exists(path) || r.outcome == Outcome::pass || r.outcome == Outcome::skip) return;
  try {
    auto log = trace::read_flight_log(path);
    if (log.entries.empty()) return;
    FlightRecord record{log.launches, {}};
    // The recorder keeps the symbol as launched (mangled); reports show "name<T>".
    auto readable = [](const std::string& symbol) { return readable_kernel_name(symbol); };
    for (size_t i = log.entries.size() > 8 ? log.entries.size() - 8 : 0; i < log.entries.size(); ++i)
      record.last.push_back({readable(log.entries[i].kernel), log.entries[i].step, log.entries[i].nvtx_path});
    const std::string kernel = readable(log.entries.back().kernel);
    r.flight_recorder = record;
    for (auto& f : r.findings)
      if (r.reason && f.code == *r.reason) {
        f.evidence["last_kernel"] = kernel;
        f.evidence["last_kernels"] = record.last;
        f.title += " (last kernel launched: " + kernel + ")";
        if (f.location.empty()) f.location = "kernel " + kernel;
        break;
      }
    std::error_code ec;
    r.artifacts.push_back(std::filesystem::relative(path, run_dir, ec).string());
  } catch (const std::exception&) {
    // An unreadable recorder only costs the kernel name.
  }
}

}  // namespace harness::run
