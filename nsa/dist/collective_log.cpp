#include "nsa/dist/collective_log.h"

namespace nsa::dist {

const char* to_string(CollectiveState s) {
  switch (s) {
    case CollectiveState::scheduled: return "scheduled";
    case CollectiveState::started: return "started";
    case CollectiveState::completed: return "completed";
    case CollectiveState::failed: return "failed";
  }
  return "?";
}

int64_t CollectiveLog::schedule(std::string op, int step, int bucket, int64_t numel, int64_t bytes) {
  CollectiveRecord r{0, std::move(op), step, bucket, numel, bytes, CollectiveState::scheduled, 0.0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.seq = next_seq_++;
    if (ring_.size() < capacity_) ring_.resize(capacity_);
    ring_[static_cast<size_t>(r.seq) % capacity_] = r;
  }
  if (listener_) listener_(r);
  return r.seq;
}

CollectiveRecord* CollectiveLog::find(int64_t seq) {
  if (ring_.empty()) return nullptr;
  auto& r = ring_[static_cast<size_t>(seq) % capacity_];
  return r.seq == seq ? &r : nullptr;
}

void CollectiveLog::changed(int64_t seq, CollectiveState s, double wait_ms) {
  CollectiveRecord copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    CollectiveRecord* r = find(seq);
    if (!r) return;  // overwritten: the ring is far ahead of this record
    r->state = s;
    r->wait_ms = wait_ms;
    copy = *r;
  }
  if (listener_) listener_(copy);
}

void CollectiveLog::start(int64_t seq) { changed(seq, CollectiveState::started, 0.0); }
void CollectiveLog::complete(int64_t seq, double wait_ms) { changed(seq, CollectiveState::completed, wait_ms); }
void CollectiveLog::fail(int64_t seq) { changed(seq, CollectiveState::failed, 0.0); }

CollectiveRecord CollectiveLog::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  CollectiveRecord best;
  for (auto& r : ring_)
    if (r.seq > 0 && r.state != CollectiveState::completed && (best.seq == 0 || r.seq < best.seq)) best = r;
  return best;
}

int64_t CollectiveLog::last_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_ - 1;
}

std::vector<CollectiveRecord> CollectiveLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CollectiveRecord> out;
  for (int64_t s = std::max<int64_t>(1, next_seq_ - static_cast<int64_t>(capacity_)); s < next_seq_; ++s) {
    auto& r = ring_[static_cast<size_t>(s) % capacity_];
    if (r.seq == s) out.push_back(r);
  }
  return out;
}

}  // namespace nsa::dist
