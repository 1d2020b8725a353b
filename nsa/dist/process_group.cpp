#include "nsa/dist/process_group.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef NSA_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef NSA_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace nsa::dist {
namespace {
using Clock = std::chrono::steady_clock;

class C10dComm : public Comm {
 public:
  C10dComm(const DistConfig& cfg, CollectiveLog& log) : Comm(cfg, log) {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(cfg.master_port);
    so.isServer = cfg.rank == 0;
    so.numWorkers = cfg.world_size;
    so.waitWorkers = false;  // the group's own rendezvous below waits, under the same timeout
    so.timeout = cfg.timeout;
    store_ = c10::make_intrusive<c10d::TCPStore>(cfg.master_addr, so);
    if (cfg.backend == "gloo") {
#ifdef NSA_WITH_GLOO
      auto opts = c10d::ProcessGroupGloo::Options::create(cfg.timeout);
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(cfg.master_addr));
      backend_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, cfg.rank, cfg.world_size, opts);
#endif
    } else if (cfg.backend == "nccl") {
#ifdef NSA_WITH_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = cfg.timeout;
      backend_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, cfg.rank, cfg.world_size, opts);
#endif
    }
    if (!backend_) throw DistError("backend '" + cfg.backend + "' is not compiled into this build");
  }

 protected:
  void run(Op op, std::vector<at::Tensor>& tensors, int root) override {
    c10::intrusive_ptr<c10d::Work> work;
    if (op == Op::allreduce) {
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      o.timeout = cfg_.timeout;
      work = backend_->allreduce(tensors, o);
    } else {
      c10d::BroadcastOptions o;
      o.rootRank = root;
      o.timeout = cfg_.timeout;
      work = backend_->broadcast(tensors, o);
    }
    work->wait(cfg_.timeout);
  }
  void store_set(const std::string& key) override { store_->set(key, std::vector<uint8_t>{'1'}); }
  void store_wait(const std::vector<std::string>& keys) override { store_->wait(keys, cfg_.timeout); }

 private:
  c10::intrusive_ptr<c10d::TCPStore> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
};

}  // namespace

std::string choose_backend(bool cuda, int world_size, int visible_gpus) {
  return cuda && world_size <= visible_gpus ? "nccl" : "gloo";
}

int rank_gpu(int local_rank, int visible_gpus) { return visible_gpus > 0 ? local_rank % visible_gpus : 0; }

bool backend_compiled(const std::string& backend) {
#ifdef NSA_WITH_GLOO
  if (backend == "gloo") return true;
#endif
#ifdef NSA_WITH_NCCL
  if (backend == "nccl") return true;
#endif
  return false;
}

std::unique_ptr<Comm> Comm::connect(const DistConfig& cfg, CollectiveLog& log) {
  if (cfg.world_size < 2) throw DistError("a process group needs world_size ≥ 2");
  if (cfg.rank < 0 || cfg.rank >= cfg.world_size) throw DistError("rank out of range");
  if (!backend_compiled(cfg.backend)) throw DistError("backend '" + cfg.backend + "' is not compiled into this build");
  return std::make_unique<C10dComm>(cfg, log);
}

void Comm::logged(Op op, const char* name, at::Tensor& t, int root, int step, int bucket) {
  const int64_t seq = log_.schedule(name, step, bucket, t.numel(), t.numel() * static_cast<int64_t>(t.element_size()));
  log_.start(seq);
  const auto t0 = Clock::now();
  std::vector<at::Tensor> tensors{t};
  try {
    run(op, tensors, root);
  } catch (...) {
    log_.fail(seq);
    throw;
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  wait_ms_ += ms;
  log_.complete(seq, ms);
}

void Comm::allreduce_sum(at::Tensor& t, int step, int bucket) { logged(Op::allreduce, "allreduce", t, 0, step, bucket); }
void Comm::broadcast(at::Tensor& t, int root, int step) { logged(Op::broadcast, "broadcast", t, root, step, 0); }

void Comm::store_barrier(const std::string& name) {
  store_set(name + "/" + std::to_string(cfg_.rank));
  std::vector<std::string> keys;
  for (int r = 0; r < cfg_.world_size; ++r) keys.push_back(name + "/" + std::to_string(r));
  store_wait(keys);
}

double Comm::take_wait_ms() {
  const double ms = wait_ms_;
  wait_ms_ = 0.0;
  return ms;
}

}  // namespace nsa::dist
