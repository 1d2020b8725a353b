#include "harness/supervisor/distributed/rank_diagnosis.h"

#include <fmt/format.h>

#include "harness/supervisor/distributed/collective_match.h"
#include "harness/supervisor/distributed/rank_checks.h"
#include "harness/core/stats.h"
#include "harness/core/outcome.h"

namespace harness::supervisor::dist {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

RankFacts facts_of(const RankStream& r) {
  RankFacts f;
  f.rank = r.rank;
  f.device = r.device;
  std::vector<double> step_ms, comm_ms;
  for (auto& s : r.steps)
    if (s.step > 1) step_ms.push_back(s.step_ms), comm_ms.push_back(s.comm_ms);
  if (!step_ms.empty()) {
    f.step_ms_median = median(step_ms);
    f.comm_ms_median = median(comm_ms);
    f.compute_ms_median = median(own_work_ms(r));
  }
  for (auto& c : r.collectives) {
    if (c.state == "completed") f.last_completed_seq = c.ref.seq;
    else if (!f.pending) f.pending = c.ref;  // started, or failed while waiting
  }
  f.last_heartbeat_s = r.last_heartbeat_s;
  f.phase = r.last_phase;
  return f;
}

Finding stall_finding(const CollectiveStall& s) {
  Finding f;
  f.severity = Severity::blocking;
  f.step = s.collective.step;
  const std::string waiting =
      s.waiting_in ? fmt::format("Rank(s) {} wait in {}", rank_list(s.waiting_ranks), describe(*s.waiting_in))
                   : std::string("No rank was left waiting in a collective");
  if (s.kind == "mismatch") {
    f.code = std::string(reason::collective_mismatch);
    f.title = s.rank >= 0 ? fmt::format("rank {} skipped {}: collectives mismatched from seq {}", s.rank,
                                        describe(s.collective), s.collective.seq)
                          : fmt::format("ranks issued different collectives at seq {}", s.collective.seq);
    f.detail = fmt::format(
        "The ranks' flight records agree up to seq {} and differ there: the other ranks issued {}{}. {} "
        "(the collectives paired up out of step from there, so the ranks' data no longer matched).",
        s.collective.seq - 1, describe(s.collective),
        s.rank >= 0 ? fmt::format(", rank {} issued {} and never issued that one though it went on to step {}",
                                  s.rank, s.rank_issued ? describe(*s.rank_issued) : "nothing",
                                  s.rank_last_step.value_or(0))
                    : "",
        waiting);
  } else {
    f.code = std::string(reason::collective_stall);
    f.title = s.rank >= 0 ? fmt::format("rank {} never reached {}; rank(s) {} wait in it", s.rank,
                                        describe(s.collective), rank_list(s.waiting_ranks))
                          : fmt::format("every rank is stuck in {}", describe(s.collective));
    f.detail = fmt::format("{}{}.", waiting,
                           s.rank >= 0 ? fmt::format("; rank {} last began step {} and never issued seq {}", s.rank,
                                                     s.rank_last_step.value_or(0), s.collective.seq)
                                       : std::string("; all ranks issued it and none completed it (transport)"));
  }
  f.location = s.rank >= 0 ? fmt::format("rank {} / {} seq {}", s.rank, s.collective.op, s.collective.seq)
                           : fmt::format("{} seq {}", s.collective.op, s.collective.seq);
  return f;
}

Finding desync_finding(const RankDesync& d) {
  Finding f;
  f.code = std::string(reason::rank_desync);
  f.severity = Severity::blocking;
  f.step = d.first_step;
  f.title = fmt::format("rank {} parameters diverge from rank(s) {} {}", d.rank, rank_list(d.reference_ranks),
                        desync_when(d));
  f.detail = fmt::format(
      "After step {} the parameter checksum of rank(s) {} ({:.9g}) differs from that of rank(s) {} ({:.9g}); "
      "data-parallel ranks apply the same averaged gradients and must stay identical.{}",
      d.first_step, rank_list(d.diverging_ranks), d.rank_sum, rank_list(d.reference_ranks), d.reference_sum,
      d.first_step - d.last_agreeing_step > 1
          ? fmt::format(" Checksums are sampled (the checksum probe's `every`): they last agreed after step {}; "
                        "`probes: {{checksum: {{every: 1}}}}` finds the exact step.",
                        d.last_agreeing_step)
          : "");
  f.location = fmt::format("rank {}", d.rank);
  return f;
}

Finding straggler_finding(const Straggler& s) {
  Finding f;
  f.code = std::string(reason::straggler);
  f.severity = Severity::warning;
  f.title = fmt::format("rank {} straggles: {:.0f} ms of own work per step vs {:.0f} ms on the others ({:.1f}×)",
                        s.rank, s.compute_ms_median, s.others_median_ms, s.factor);
  f.detail = fmt::format(
      "Median over the warm steps of step time minus time blocked in collectives; the other ranks' noise is "
      "{:.1f} ms (scaled MAD). The others wait for rank {} at every collective.",
      s.others_noise_ms, s.rank);
  f.location = fmt::format("rank {}", s.rank);
  return f;
}

}  // namespace

std::string desync_when(const RankDesync& d) {
  if (d.first_step - d.last_agreeing_step <= 1) return fmt::format("at step {}", d.first_step);
  return fmt::format("between step {} and {}", d.last_agreeing_step + 1, d.first_step);
}

std::string describe(const CollectiveRef& c) {
  return fmt::format("{} #{} (step {}, bucket {})", c.op, c.seq, c.step, c.bucket);
}

RankDiagnosis diagnose_ranks(const std::vector<RankStream>& ranks) {
  RankDiagnosis d;
  d.facts.world_size = static_cast<int>(ranks.size());
  for (auto& r : ranks) d.facts.ranks.push_back(facts_of(r));
  d.facts.stall = find_collective_stall(ranks);
  d.facts.desync = find_desync(ranks);
  d.facts.stragglers = find_stragglers(ranks);
  if (d.facts.stall) d.findings.push_back(stall_finding(*d.facts.stall));
  if (d.facts.desync) d.findings.push_back(desync_finding(*d.facts.desync));
  for (auto& s : d.facts.stragglers) d.findings.push_back(straggler_finding(s));
  return d;
}

}  // namespace harness::supervisor::dist
