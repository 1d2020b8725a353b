#pragma once
// Hands the visible GPUs to cells: each GPU cell holds a group of
// `per_cell` GPUs from launch until its child (and the child's whole process
// group) has been reaped, so a cell that hangs holds only its own group until
// its watchdog kills it. By default no two running cells share a GPU; with
// `cells_per_gpu` K > 1 up to K cells hold one at a time (host-bound cells —
// sequential prefill, batch 1 — leave a GPU mostly idle), and each lease
// counts the most cells that held one of its GPUs at once, so a cell's result
// says how shared its timings were. CPU cells take no group and are shown no
// GPU at all.
//
// Groups are consecutive runs of the visible list, aligned to their size:
// neighbours in the driver's order are usually the NVLink/PCIe-switch peers a
// multi-GPU cell wants. A world_size cell takes a GPU per rank when there are
// enough (count_for), each rank the one of its LOCAL_RANK among them.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/run/gpu_inventory.h"

namespace harness::run {

// A run of consecutive GPUs of the pool: [first, first + count).
// `ticket` names one lease of it (several cells may hold the same block when
// GPUs are shared); equality compares the GPUs only.
struct GpuBlock {
  size_t first = 0;
  size_t count = 0;
  size_t ticket = 0;
  bool operator==(const GpuBlock& o) const { return first == o.first && count == o.count; }
  bool operator!=(const GpuBlock& o) const { return !(*this == o); }
};

class GpuPool {
 public:
  // `per_cell` GPUs to a cell by default; blocks of n GPUs start at multiples
  // of n, so cells of one size never fragment the pool, and with per_cell
  // alone the leftover GPUs (unused()) are never handed out.
  GpuPool(std::vector<VisibleGpu> gpus, int per_cell, int cells_per_gpu = 1);
  GpuPool(const GpuPool&) = delete;
  GpuPool& operator=(const GpuPool&) = delete;

  size_t groups() const { return per_cell_ ? gpus_.size() / per_cell_ : 0; }  // per_cell blocks
  std::vector<VisibleGpu> group(size_t i) const { return gpus_of(GpuBlock{i * per_cell_, per_cell_}); }
  std::vector<VisibleGpu> unused() const;
  std::vector<VisibleGpu> gpus_of(const GpuBlock& b) const;

  // How many GPUs a cell of `world_size` ranks holds: one per rank when the
  // pool has that many (NCCL, each rank its own), else per_cell (the ranks
  // share them over Gloo: nsa/dist/process_group.h); never fewer than per_cell.
  size_t count_for(int world_size) const;

  // The lowest block of `count` whose GPUs each hold fewer than
  // cells_per_gpu cells, waiting for one: nullopt when `stop`
  // (polled) turns true or `deadline_s` passes first, or when no block of
  // that size fits the pool. Without `count`: per_cell.
  std::optional<GpuBlock> acquire(size_t count, const std::function<bool()>& stop, double deadline_s);
  std::optional<GpuBlock> acquire(const std::function<bool()>& stop, double deadline_s) {
    return acquire(per_cell_, stop, deadline_s);
  }
  // Gives the lease back; returns the most cells that held one of its GPUs
  // at the same time while it was held, itself included (1: alone).
  int release(const GpuBlock& b);

 private:
  int most_holders(const GpuBlock& b) const;  // over the block's GPUs, now

  std::vector<VisibleGpu> gpus_;
  size_t per_cell_;
  int cells_per_gpu_;
  std::vector<int> holders_;  // per GPU
  size_t next_ticket_ = 1;
  std::vector<std::pair<GpuBlock, int>> leases_;  // held now: block and its peak holders
  std::mutex mu_;
  std::condition_variable freed_;
};

// Releases its block when it goes out of scope.
class GpuLease {
 public:
  GpuLease(GpuPool& pool, GpuBlock block) : pool_(&pool), block_(block) {}
  GpuLease(GpuLease&& o) noexcept : pool_(o.pool_), block_(o.block_) { o.pool_ = nullptr; }
  GpuLease(const GpuLease&) = delete;
  GpuLease& operator=(const GpuLease&) = delete;
  GpuLease& operator=(GpuLease&&) = delete;
  ~GpuLease() { release(); }
  const GpuBlock& block() const { return block_; }
  // Gives the block back now (once); the peak sharing of GpuPool::release, 0 if already given back.
  int release() {
    GpuPool* p = pool_;
    pool_ = nullptr;
    return p ? p->release(block_) : 0;
  }

 private:
  GpuPool* pool_;
  GpuBlock block_;
};

// The group as the child's CUDA_VISIBLE_DEVICES: the tokens, comma-separated.
std::string cuda_visible_devices(const std::vector<VisibleGpu>& group);
std::vector<GpuDevice> devices_of(const std::vector<VisibleGpu>& group);

// Does the cell compute on a GPU? "auto" does exactly when CUDA is usable
// here (the child's own rule, cell_runner.cpp).
bool needs_gpu(const CellSpec& cell, bool have_cuda);

// How the scheduler places cells on GPUs. No pool: GPUs are not managed and
// every child inherits this process's CUDA_VISIBLE_DEVICES (the behaviour on a
// machine whose GPUs could not be listed).
struct GpuPlacement {
  GpuPool* pool = nullptr;
  std::function<bool(const CellSpec&)> needs_gpu;
  // The longest a cell waits for a group; a longer wait means a holder
  // outlived its own wall cap, which is the harness's failure.
  double wait_deadline_s = 0.0;
};

// The GPUs `run` hands out. nvidia-smi is asked only when a cell that will
// run here computes on a GPU; NSA_HARNESS_FAKE_GPUS, when set, is always read
// and checked (it exists for tests). Throws GpuListError (bad input, exit 2)
// for a malformed fake list or for groups larger than the GPUs visible.
GpuDiscovery gpus_for_cells(const std::vector<CellSpec>& cells, bool have_cuda, int per_cell);

}  // namespace harness::run
