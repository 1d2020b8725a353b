#include "harness/supervisor/distributed/rank_checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/core/stats.h"

namespace harness::supervisor::dist {
namespace {

bool same_checksum(const std::pair<double, double>& a, const std::pair<double, double>& b) {
  auto close = [](double x, double y) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    return std::fabs(x - y) <= kChecksumRelTol * std::max({1.0, std::fabs(x), std::fabs(y)});
  };
  return close(a.first, b.first) && close(a.second, b.second);
}

}  // namespace

std::optional<RankDesync> find_desync(const std::vector<RankStream>& ranks) {
  std::set<int> steps;
  for (auto& r : ranks)
    for (auto& [step, sum] : r.checksums) steps.insert(step);
  int last_agreeing = 0;  // the set-up broadcast made every rank rank 0's copy
  for (int step : steps) {
    // Group the ranks that logged this step by checksum.
    std::vector<std::vector<const RankStream*>> groups;
    for (auto& r : ranks) {
      auto it = r.checksums.find(step);
      if (it == r.checksums.end()) continue;
      bool placed = false;
      for (auto& g : groups)
        if (same_checksum(g.front()->checksums.at(step), it->second)) {
          g.push_back(&r);
          placed = true;
          break;
        }
      if (!placed) groups.push_back({&r});
    }
    if (groups.size() < 2) {
      if (groups.size() == 1 && groups.front().size() == ranks.size()) last_agreeing = step;
      continue;
    }
    // Reference: the largest group; on a tie the one holding the lowest rank
    // (rank 0's parameters are the ones every rank started from).
    size_t ref = 0;
    for (size_t g = 1; g < groups.size(); ++g)
      if (groups[g].size() > groups[ref].size() ||
          (groups[g].size() == groups[ref].size() && groups[g].front()->rank < groups[ref].front()->rank))
        ref = g;
    RankDesync d;
    d.first_step = step;
    d.last_agreeing_step = last_agreeing;
    for (auto* r : groups[ref]) d.reference_ranks.push_back(r->rank);
    for (size_t g = 0; g < groups.size(); ++g)
      if (g != ref)
        for (auto* r : groups[g]) d.diverging_ranks.push_back(r->rank);
    std::sort(d.diverging_ranks.begin(), d.diverging_ranks.end());
    d.rank = d.diverging_ranks.front();
    for (auto& r : ranks)
      if (r.rank == d.rank) d.rank_sum = r.checksums.at(step).first;
    d.reference_sum = groups[ref].front()->checksums.at(step).first;
    return d;
  }
  return std::nullopt;
}

std::vector<double> own_work_ms(const RankStream& r) {
  std::vector<double> out;
  for (auto& s : r.steps)
    if (s.step > 1) out.push_back(std::max(0.0, s.step_ms - s.comm_ms));
  return out;
}

std::vector<Straggler> find_stragglers(const std::vector<RankStream>& ranks) {
  std::vector<Straggler> out;
  if (ranks.size() < 2) return out;
  std::map<int, std::vector<double>> work;
  for (auto& r : ranks) {
    auto w = own_work_ms(r);
    if (static_cast<int>(w.size()) < kStragglerMinSteps) return out;  // too few steps to judge anyone
    work[r.rank] = std::move(w);
  }
  for (auto& [rank, mine] : work) {
    std::vector<double> medians, pooled;
    for (auto& [other, theirs] : work) {
      if (other == rank) continue;
      // Each other rank's median, and its noise around that median, pooled.
      const double m = median(theirs);
      medians.push_back(m);
      for (double x : theirs) pooled.push_back(x - m);
    }
    const double ref = median(medians);
    const double noise = mad_spread(pooled);
    const double me = median(mine);
    const double margin = std::max({kStragglerNoise * noise, kStragglerMinMs, (kStragglerFactor - 1.0) * ref});
    if (me - ref > margin) out.push_back(Straggler{rank, me, ref, noise, ref > 0 ? me / ref : 0.0});
  }
  return out;
}

}  // namespace harness::supervisor::dist
