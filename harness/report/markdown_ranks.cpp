#include "harness/report/markdown_ranks.h"

#include <algorithm>

#include <fmt/format.h>

namespace harness {
namespace {

std::string ms(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : "—"; }

std::string coll(const CollectiveRef& c) {
  return fmt::format("{} #{} (step {}, bucket {})", c.op, c.seq, c.step, c.bucket);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

std::string cell_block(const CellResult& c, const DistributedFacts& d) {
  std::vector<std::string> seen;  // each distinct device once, in rank order
  std::string devices;
  for (auto& r : d.ranks)
    if (!r.device.empty() && std::find(seen.begin(), seen.end(), r.device) == seen.end()) {
      devices += (devices.empty() ? "" : ", ") + r.device;
      seen.push_back(r.device);
    }
  std::string s = fmt::format("### `{}` — {} ranks ({}{})\n\n", c.id, d.world_size, d.backend,
                              devices.empty() ? "" : " on " + devices);
  s += "| rank | outcome | steps | step ms | own work ms | waiting ms | last completed | blocked in |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (auto& r : d.ranks)
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.rank, r.outcome, r.steps_completed,
                     ms(r.step_ms_median), ms(r.compute_ms_median), ms(r.comm_ms_median),
                     r.last_completed_seq > 0 ? fmt::format("#{}", r.last_completed_seq) : "—",
                     r.pending ? coll(*r.pending) : r.phase.empty() ? "—" : fmt::format("phase {}", r.phase));
  s += "\n";
  if (d.stall) {
    const auto& st = *d.stall;
    if (st.kind == "mismatch")
      s += st.rank >= 0 ? fmt::format("- **Collective mismatch:** rank {} skipped {} (issued {} at that seq)", st.rank,
                                      coll(st.collective), st.rank_issued ? coll(*st.rank_issued) : "nothing")
                        : fmt::format("- **Collective mismatch** at seq {}", st.collective.seq);
    else
      s += st.rank >= 0 ? fmt::format("- **Stuck:** rank {} never reached {} (last began step {})", st.rank,
                                      coll(st.collective), st.rank_last_step.value_or(0))
                        : fmt::format("- **Stuck:** every rank in {}", coll(st.collective));
    if (st.waiting_in)
      s += fmt::format("; rank(s) {} wait in {}", ranks_text(st.waiting_ranks), coll(*st.waiting_in));
    s += ".\n";
  }
  if (d.desync) {
    // Sampled checksums bound the diverging update: after the last step they agreed, by the first they did not.
    const auto& ds = *d.desync;
    const std::string when = ds.first_step - ds.last_agreeing_step > 1
                                 ? fmt::format("between step {} and {} (sampled parameter checksums)",
                                               ds.last_agreeing_step + 1, ds.first_step)
                                 : fmt::format("from step {} (parameter checksum)", ds.first_step);
    s += fmt::format("- **Desynchronised:** rank(s) {} differ from rank(s) {} {}.\n",
                     ranks_text(ds.diverging_ranks), ranks_text(ds.reference_ranks), when);
  }
  for (auto& st : d.stragglers)
    s += fmt::format("- **Straggler:** rank {}: {:.1f} ms own work per step vs {:.1f} ms on the others ({:.1f}×, "
                     "their noise {:.1f} ms).\n",
                     st.rank, st.compute_ms_median, st.others_median_ms, st.factor, st.others_noise_ms);
  if (!d.stall && !d.desync && d.stragglers.empty()) s += "- The ranks agree: no stall, no divergence, no straggler.\n";
  return s + "\n";
}

}  // namespace

std::string render_ranks_section(const RunResult& run) {
  std::string s;
  for (auto& c : run.cells)
    if (c.distributed) s += cell_block(c, *c.distributed);
  return s;
}

}  // namespace harness
