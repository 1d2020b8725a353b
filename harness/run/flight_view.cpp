#include "harness/run/flight_view.h"

#include <zlib.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/core/kernel_name.h"
#include "harness/protocol/events.h"
#include "harness/run/run_dir.h"

namespace harness::run {
namespace {

// The trace is a gzip'd JSON array with one event per line; a killed writer
// leaves it without its end, so it is read line by line, not as one document.
std::vector<std::string> gz_lines(const std::string& path) {
  std::vector<std::string> lines;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return lines;
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  lines.push_back(text.substr(start));
  return lines;
}

void keep_last(std::vector<trace::FlightEntry>& v, int last) {
  if (v.size() > static_cast<size_t>(last)) v.erase(v.begin(), v.end() - last);
}

std::string entry_line(const trace::FlightEntry& e) {
  return fmt::format("  #{} step {} {}{}\n", e.seq, e.step, readable_kernel_name(e.kernel),
                     e.nvtx_path.empty() ? "" : "  [" + e.nvtx_path + "]");
}

}  // namespace

std::map<std::uint32_t, std::uint32_t> completed_kernel_streams(const std::string& trace_path) {
  std::map<std::uint32_t, std::uint32_t> streams;
  for (std::string line : gz_lines(trace_path)) {
    while (!line.empty() && (line.back() == ',' || line.back() == ']' || line.back() == '\r')) line.pop_back();
    if (line.empty() || line.front() != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("cat", "") != "kernel" || !j.contains("args")) continue;
    const auto& a = j["args"];
    if (a.contains("correlation") && a.contains("stream"))
      streams[a["correlation"].get<std::uint32_t>()] = a["stream"].get<std::uint32_t>();
  }
  return streams;
}

FlightView read_flight(const std::string& cell_dir, const std::string& cell, int last) {
  namespace fs = std::filesystem;
  FlightView v;
  v.cell = cell;
  v.recorder = (fs::path(cell_dir) / trace::kFlightRecorderFile).string();
  std::error_code ec;
  if (!fs::is_regular_file(v.recorder, ec))
    throw InputError("cell '" + cell + "' has no flight recorder (" + v.recorder +
                     "): it records kernel launches, so only cells that ran CUDA kernels with CUPTI have one");
  v.log = trace::read_flight_log(v.recorder);
  const fs::path trace_path = fs::path(cell_dir) / protocol::kTraceFile;
  v.have_trace = fs::is_regular_file(trace_path, ec);
  const auto streams = v.have_trace ? completed_kernel_streams(trace_path.string())
                                    : std::map<std::uint32_t, std::uint32_t>{};
  std::map<std::string, FlightLane> lanes;
  std::vector<std::string> order;
  for (const auto& e : v.log.entries) {
    std::string label;
    if (!v.have_trace) {
      label = "host thread " + std::to_string(e.thread);
    } else if (auto it = streams.find(e.correlation_id); it != streams.end()) {
      label = "stream " + std::to_string(it->second);
    } else {
      v.in_flight.push_back(e);
      continue;
    }
    if (!lanes.count(label)) order.push_back(label);
    FlightLane& lane = lanes[label];
    lane.label = label;
    lane.last.push_back(e);
    ++lane.total;
  }
  for (const auto& label : order) {
    keep_last(lanes[label].last, last);
    v.lanes.push_back(lanes[label]);
  }
  return v;
}

std::string render_flight(const FlightView& v) {
  std::string s = fmt::format("flight recorder of cell {} ({})\n", v.cell, v.recorder);
  s += fmt::format("writer pid {}, {} launch(es) recorded, the last {} kept, step {} when it stopped\n", v.log.pid,
                   v.log.launches, v.log.entries.size(), v.log.current_step);
  if (!v.have_trace) {
    s += "no trace.json.gz in the cell: which launches completed is unknown; launches by host thread\n";
  } else {
    s += fmt::format("\nin flight (launched, no completion in the trace): {}\n", v.in_flight.size());
    for (const auto& e : v.in_flight) s += entry_line(e);
  }
  for (const auto& lane : v.lanes) {
    s += fmt::format("\n{}: last {} of {} launch(es){}\n", lane.label, lane.last.size(), lane.total,
                     v.have_trace ? " that completed" : "");
    for (const auto& e : lane.last) s += entry_line(e);
  }
  return s;
}

}  // namespace harness::run
