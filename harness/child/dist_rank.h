#pragma once
// The child side of a world_size > 1 cell: this process is one rank. It joins
// the others (the supervisor put RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT in its environment, torchrun's names), runs data parallel
// training through nsa/dist, and writes what a distributed post-mortem needs
// as events (protocol/events.h):
//   collective  {rank, seq, op, step, bucket, numel, bytes, state, wait_ms?}   every state change
//   heartbeat   {rank, step, last_seq, pending_seq?, pending_op?, pending_step?}   every kHeartbeatS
// and the checksum probe (harness/probes/checksum_probe.cpp) adds
//   checksum    {rank, step, sum, sq}                                           after a sampled step's update
// Heartbeats prove the process is alive, not that it progresses: the
// supervisor's stall deadline ignores them.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "harness/protocol/events.h"
#include "nsa/dist/data_parallel.h"

namespace harness::child {

inline constexpr double kHeartbeatS = 1.0;

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
};

// From the environment; throws std::runtime_error naming what is missing or
// disagrees with the cell's world_size.
RankEnv rank_env_from_environment(int world_size);

class DistRank {
 public:
  // Connects (every wait under `timeout_s`) and starts the heartbeat.
  DistRank(const RankEnv& env, const std::string& backend, double timeout_s, protocol::EventWriter& events);
  ~DistRank();
  DistRank(const DistRank&) = delete;
  DistRank& operator=(const DistRank&) = delete;

  nsa::dist::DataParallel& data_parallel() { return *dp_; }
  const RankEnv& env() const { return env_; }
  const std::string& backend() const { return backend_; }
  void set_step(int step) { step_.store(step); }
  // Milliseconds blocked in collectives since the last call (once per step).
  double take_wait_ms();
  // Every rank done: no rank leaves while another still needs rank 0's store.
  void finish();

 private:
  void heartbeat_loop();

  RankEnv env_;
  std::string backend_;
  protocol::EventWriter& events_;
  nsa::dist::CollectiveLog log_;
  std::unique_ptr<nsa::dist::Comm> comm_;
  std::unique_ptr<nsa::dist::DataParallel> dp_;
  std::atomic<int> step_{0};
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace harness::child
