#include "harness/supervisor/distributed/collective_match.h"

#include <map>
#include <set>
#include <tuple>

namespace harness::supervisor::dist {
namespace {

using Key = std::tuple<std::string, int, int>;  // op, step, bucket: what a collective is, apart from its seq
Key key_of(const CollectiveRef& c) { return {c.op, c.step, c.bucket}; }

const CollectiveEntry* at_seq(const RankStream& r, int64_t seq) {
  for (auto& c : r.collectives)
    if (c.ref.seq == seq) return &c;
  return nullptr;
}

bool issued(const RankStream& r, const Key& k) {
  for (auto& c : r.collectives)
    if (key_of(c.ref) == k) return true;
  return false;
}

// A collective that failed never completed: it failed because the rank waited
// in it until a peer died or the timeout struck, so it is where the rank waited.
bool finished(const CollectiveEntry& c) { return c.state == "completed"; }

// The oldest collective each rank still waits in (logged, never completed).
std::map<int, CollectiveRef> pending_by_rank(const std::vector<RankStream>& ranks) {
  std::map<int, CollectiveRef> out;
  for (auto& r : ranks)
    for (auto& c : r.collectives)
      if (!finished(c)) {
        out.emplace(r.rank, c.ref);
        break;
      }
  return out;
}

void fill_waiting(CollectiveStall& s, const std::vector<RankStream>& ranks) {
  auto pending = pending_by_rank(ranks);
  const CollectiveRef* first = nullptr;
  for (auto& [rank, ref] : pending)
    if (rank != s.rank && (!first || ref.seq < first->seq)) first = &ref;
  if (!first) return;
  s.waiting_in = *first;
  for (auto& [rank, ref] : pending)
    if (rank != s.rank && ref.seq == first->seq) s.waiting_ranks.push_back(rank);
}

std::optional<CollectiveStall> first_mismatch(const std::vector<RankStream>& ranks) {
  std::set<int64_t> seqs;
  for (auto& r : ranks)
    for (auto& c : r.collectives) seqs.insert(c.ref.seq);
  for (int64_t seq : seqs) {
    std::map<Key, std::vector<const RankStream*>> by_key;
    for (auto& r : ranks)
      if (auto* c = at_seq(r, seq)) by_key[key_of(c->ref)].push_back(&r);
    if (by_key.size() < 2) continue;
    // The rank at fault left out a collective that others issued at this seq,
    // though its own steps went past that collective's step.
    for (auto& [k, holders] : by_key) {
      for (auto& r : ranks) {
        const auto* own = at_seq(r, seq);
        if (own && key_of(own->ref) == k) continue;
        if (issued(r, k) || r.last_step_begun <= std::get<1>(k)) continue;
        CollectiveStall s;
        s.kind = "mismatch";
        s.rank = r.rank;
        s.collective = at_seq(*holders.front(), seq)->ref;
        if (own) s.rank_issued = own->ref;
        s.rank_last_step = r.last_step_begun;
        fill_waiting(s, ranks);
        return s;
      }
    }
    // Different collectives and none left out (e.g. issued in another order):
    // the majority's is the reference; no single rank is named.
    CollectiveStall s;
    s.kind = "mismatch";
    size_t best = 0;
    for (auto& [k, holders] : by_key)
      if (holders.size() > best) best = holders.size(), s.collective = at_seq(*holders.front(), seq)->ref;
    fill_waiting(s, ranks);
    return s;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CollectiveStall> find_collective_stall(const std::vector<RankStream>& ranks) {
  if (auto m = first_mismatch(ranks)) return m;
  auto pending = pending_by_rank(ranks);
  if (pending.empty()) return std::nullopt;
  int64_t seq = -1;
  CollectiveRef waited;
  for (auto& [rank, ref] : pending)
    if (seq < 0 || ref.seq < seq) seq = ref.seq, waited = ref;
  CollectiveStall s;
  s.kind = "not_reached";
  s.collective = waited;
  s.waiting_in = waited;
  for (auto& [rank, ref] : pending)
    if (ref.seq == seq) s.waiting_ranks.push_back(rank);
  for (auto& r : ranks)
    if (!at_seq(r, seq)) {  // lowest such rank: the one the others wait for
      s.rank = r.rank;
      s.rank_last_step = r.last_step_begun;
      break;
    }
  return s;
}

}  // namespace harness::supervisor::dist
