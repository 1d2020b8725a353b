#pragma once
// The flight recorder of one rank (the idea of PyTorch's NCCL flight
// recorder): every collective this rank issues gets a sequence number, and its
// record moves scheduled → started → completed. A bounded ring keeps the last
// records for a live look (heartbeats say which one is pending), and a
// listener hears every change — the harness writes each as an event, so a
// rank killed in a hang still leaves on disk which collective it waited in.
#include <cstdint>
#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace nsa::dist {

enum class CollectiveState { scheduled, started, completed, failed };
const char* to_string(CollectiveState s);

struct CollectiveRecord {
  int64_t seq = 0;          // 1-based, per rank, in issue order: the same collective has the same seq on every rank
  std::string op;           // "broadcast", "allreduce"
  int step = 0;             // training step that issued it (0: set-up)
  int bucket = 0;           // which gradient bucket (DDP-style), 0 otherwise
  int64_t numel = 0;
  int64_t bytes = 0;
  CollectiveState state = CollectiveState::scheduled;
  double wait_ms = 0.0;     // completed: how long this rank blocked waiting for it
};

class CollectiveLog {
 public:
  using Listener = std::function<void(const CollectiveRecord&)>;
  explicit CollectiveLog(size_t capacity = 256) : capacity_(capacity) {}

  void set_listener(Listener l) { listener_ = std::move(l); }
  // A new collective: returns its seq.
  int64_t schedule(std::string op, int step, int bucket, int64_t numel, int64_t bytes);
  void start(int64_t seq);
  void complete(int64_t seq, double wait_ms);
  void fail(int64_t seq);

  // The oldest record not completed (the one a stuck rank waits in), seq 0 if none.
  CollectiveRecord pending() const;
  int64_t last_seq() const;
  std::vector<CollectiveRecord> snapshot() const;  // oldest first

 private:
  CollectiveRecord* find(int64_t seq);  // caller holds mu_
  void changed(int64_t seq, CollectiveState s, double wait_ms);

  size_t capacity_;
  mutable std::mutex mu_;
  std::vector<CollectiveRecord> ring_;  // ring_[seq % capacity]
  int64_t next_seq_ = 1;
  Listener listener_;
};

}  // namespace nsa::dist
