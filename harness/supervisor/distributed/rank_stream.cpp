#include "harness/supervisor/distributed/rank_stream.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace harness::supervisor::dist {
namespace {
int state_rank(const std::string& s) {
  if (s == "scheduled") return 0;
  if (s == "started") return 1;
  return 2;  // completed / failed: final
}
}  // namespace

RankStream read_rank_stream(int rank, std::istream& in) {
  RankStream r;
  r.rank = rank;
  std::map<int64_t, CollectiveEntry> by_seq;
  std::vector<std::string> phases;
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object() || !e.contains("ev") || !e["ev"].is_string()) continue;
    const std::string kind = e["ev"].get<std::string>();
    try {
      if (kind == "collective") {
        CollectiveEntry c;
        c.ref.seq = e.at("seq").get<int64_t>();
        c.ref.op = e.value("op", "");
        c.ref.step = e.value("step", 0);
        c.ref.bucket = e.value("bucket", 0);
        c.state = e.value("state", "");
        c.wait_ms = e.value("wait_ms", 0.0);
        auto [it, fresh] = by_seq.try_emplace(c.ref.seq, c);
        if (!fresh && state_rank(c.state) >= state_rank(it->second.state)) it->second = c;
      } else if (kind == "start") {
        r.device = e.value("device", "");
        r.backend = e.value("backend", "");
      } else if (kind == "step_begin") {
        r.last_step_begun = e.value("step", r.last_step_begun);
      } else if (kind == "step_end") {
        r.steps.push_back({e.value("step", 0), e.value("step_ms", 0.0), e.value("comm_ms", 0.0)});
      } else if (kind == "checksum") {
        r.checksums[e.value("step", 0)] = {e.value("sum", 0.0), e.value("sq", 0.0)};
      } else if (kind == "heartbeat") {
        r.last_heartbeat_s = e.value("t", 0.0);
      } else if (kind == "phase_begin") {
        phases.push_back(e.value("name", ""));
      } else if (kind == "phase_end") {
        if (!phases.empty()) phases.pop_back();
      } else if (kind == "done") {
        r.done = true;
      }
    } catch (const nlohmann::json::exception&) {
      // a field of the wrong type: skip the line, as a malformed one
    }
  }
  for (auto& [seq, c] : by_seq) r.collectives.push_back(c);
  r.last_phase = phases.empty() ? "" : phases.back();
  return r;
}

RankStream read_rank_stream_file(int rank, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    RankStream r;
    r.rank = rank;
    return r;
  }
  return read_rank_stream(rank, in);
}

}  // namespace harness::supervisor::dist
