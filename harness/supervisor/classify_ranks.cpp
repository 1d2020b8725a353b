// classify_ranks (rank_group.h): a world_size > 1 cell's result from its ranks.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/supervisor/distributed/rank_diagnosis.h"
#include "harness/protocol/events.h"
#include "harness/supervisor/classify.h"
#include "harness/supervisor/rank_group.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;

// The rank whose own result decides the cell: the worst outcome among the
// ranks that ended on their own (a rank stopped with the group only shows
// that another failed); on a tie the lowest rank.
size_t deciding_rank(const std::vector<CellResult>& results, const std::vector<SupervisedRun>& runs) {
  size_t best = 0;
  int best_rank = -1;
  for (size_t r = 0; r < results.size(); ++r) {
    if (runs[r].stopped_with_group) continue;
    const int sev = severity_rank(results[r].outcome);
    if (sev > best_rank) best_rank = sev, best = r;
  }
  return best;
}

void tag_rank(std::vector<Finding>& findings, size_t r) {
  for (auto& f : findings)
    f.location = f.location.empty() ? fmt::format("rank {}", r) : fmt::format("rank {} / {}", r, f.location);
}

}  // namespace

CellResult classify_ranks(const CellSpec& spec, const SupervisedRun& group) {
  std::vector<CellResult> results;
  for (auto& run : group.ranks) results.push_back(classify(spec, run));
  const size_t decider = deciding_rank(results, group.ranks);

  CellResult out = results[decider];
  tag_rank(out.findings, decider);
  // Rank 0's steps and metrics: its losses are the global batch's, as every rank's are.
  out.steps = results[0].steps;
  out.metrics = results[0].metrics;
  out.step_noise = results[0].step_noise;
  out.steps_completed = results[0].steps_completed;
  for (auto& r : results) out.steps_completed = std::min(out.steps_completed, r.steps_completed);
  out.artifacts.clear();
  for (auto& r : results) out.artifacts.insert(out.artifacts.end(), r.artifacts.begin(), r.artifacts.end());
  out.wall_s = group.wall_s;
  // Another rank that failed differently is reported too, under its rank.
  for (size_t r = 0; r < results.size(); ++r) {
    if (r == decider || group.ranks[r].stopped_with_group || results[r].outcome == out.outcome) continue;
    auto extra = results[r].findings;
    tag_rank(extra, r);
    for (auto& f : extra)
      if (f.severity == Severity::blocking) out.findings.push_back(f);
  }

  // What the ranks' event streams show side by side.
  std::vector<dist::RankStream> streams;
  for (size_t r = 0; r < group.ranks.size(); ++r)
    streams.push_back(dist::read_rank_stream_file(
        static_cast<int>(r), (fs::path(group.ranks[r].cell_dir) / protocol::kEventsFile).string()));
  auto diag = dist::diagnose_ranks(streams);
  // As the ranks ran it (the child chooses: nsa/dist/process_group.h), from the first rank that started.
  for (auto& st : streams)
    if (diag.facts.backend.empty()) diag.facts.backend = st.backend;
  for (size_t r = 0; r < results.size() && r < diag.facts.ranks.size(); ++r) {
    diag.facts.ranks[r].outcome = group.ranks[r].stopped_with_group ? "stopped" : std::string(to_string(results[r].outcome));
    diag.facts.ranks[r].steps_completed = results[r].steps_completed;
  }
  out.findings.insert(out.findings.begin(), diag.findings.begin(), diag.findings.end());
  out.distributed = std::move(diag.facts);

  // A hang the flight records explain is named by them; a blocking
  // distributed finding in a cell that otherwise passed fails it.
  const Finding* decisive = nullptr;
  for (auto& f : diag.findings)
    if (f.severity == Severity::blocking) {
      decisive = &f;
      break;
    }
  if (decisive) {
    const bool names_hang = decisive->code == reason::collective_mismatch || decisive->code == reason::collective_stall;
    if (out.outcome == Outcome::hang && names_hang) out.reason = decisive->code;
    if (out.outcome == Outcome::pass || out.outcome == Outcome::slow_step) {
      out.outcome = Outcome::fail;
      out.reason = decisive->code;
    }
  }
  if (spec.expect) out.expect_met = expectation_met(*spec.expect, out.outcome, out.reason, out.findings);
  return out;
}

}  // namespace harness::supervisor
