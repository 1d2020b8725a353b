#pragma once
// One rank's connection to the others through PyTorch's own distributed layer
// (c10d): a TCPStore for rendezvous (rank 0 hosts it) and a ProcessGroupGloo on
// the CPU or a ProcessGroupNCCL on CUDA. Every collective goes through here so
// that the flight recorder (collective_log.h) sees each one, and every wait has
// a deadline: the store's connect and waits, and each collective's work.
#include <ATen/ATen.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nsa/dist/collective_log.h"

namespace nsa::dist {

struct DistConfig {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string backend = "gloo";  // gloo (CPU or CUDA tensors) | nccl (CUDA tensors); see choose_backend
  // Store connect and waits, and each collective. The supervisor's own stall
  // deadline should fire first, so a hang is diagnosed before it times out here.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
};

// The process group of a world_size cell's ranks. NCCL needs a GPU per rank
// (it refuses two ranks on one device); when the ranks share GPUs, or run on
// the CPU, Gloo: c10d's Gloo backend takes CUDA tensors too and stages them
// through host memory itself. `visible_gpus`: the GPUs the cell sees.
std::string choose_backend(bool cuda, int world_size, int visible_gpus);
// The GPU of `local_rank` among `visible_gpus`: its own while there are
// enough, else shared round-robin (the Gloo case above).
int rank_gpu(int local_rank, int visible_gpus);

// Was this backend compiled in? (Gloo needs gloo's headers at build time,
// NCCL a CUDA build with nccl.h.) A world_size > 1 cell without it is skipped.
bool backend_compiled(const std::string& backend);

struct DistError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Comm {
 public:
  // Rendezvous and group creation; throws DistError (or c10::Error) on timeout.
  static std::unique_ptr<Comm> connect(const DistConfig& cfg, CollectiveLog& log);
  virtual ~Comm() = default;

  int rank() const { return cfg_.rank; }
  int world_size() const { return cfg_.world_size; }

  // In place; each logged as one collective of `step` (and `bucket`).
  void allreduce_sum(at::Tensor& t, int step, int bucket);
  void broadcast(at::Tensor& t, int root, int step);
  // All ranks reach `name` or DistError after the timeout; through the store,
  // not the process group, so a group wedged by a bad collective cannot block it.
  void store_barrier(const std::string& name);
  // Milliseconds this rank spent blocked in collectives since the last call.
  double take_wait_ms();

 protected:
  explicit Comm(const DistConfig& cfg, CollectiveLog& log) : cfg_(cfg), log_(log) {}
  enum class Op { allreduce, broadcast };
  // Issues the collective and blocks until it completes (or throws).
  virtual void run(Op op, std::vector<at::Tensor>& tensors, int root) = 0;
  virtual void store_set(const std::string& key) = 0;
  virtual void store_wait(const std::vector<std::string>& keys) = 0;

  DistConfig cfg_;
  CollectiveLog& log_;
  double wait_ms_ = 0.0;

 private:
  void logged(Op op, const char* name, at::Tensor& t, int root, int step, int bucket);
};

}  // namespace nsa::dist
