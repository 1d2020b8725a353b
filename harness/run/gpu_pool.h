#pragma once
// Hands the visible GPUs to cells: each GPU cell holds a group of
// `per_cell` GPUs from launch until its child (and the child's whole process
// group) has been reaped, so a cell that hangs holds only its own group until
// its watchdog kills it, and no two running cells ever share a GPU. CPU cells
// take no group and are shown no GPU at all.
//
// Groups are fixed, consecutive runs of the visible list: neighbours in the
// driver's order are usually the NVLink/PCIe-switch peers a multi-GPU cell
// wants, and a fixed partition cannot fragment.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"
#include "harness/run/gpu_inventory.h"

namespace harness::run {

class GpuPool {
 public:
  // `gpus.size() / per_cell` groups; the leftover GPUs (unused()) are never handed out.
  GpuPool(std::vector<VisibleGpu> gpus, int per_cell);
  GpuPool(const GpuPool&) = delete;
  GpuPool& operator=(const GpuPool&) = delete;

  size_t groups() const { return groups_.size(); }
  const std::vector<VisibleGpu>& group(size_t i) const { return groups_.at(i); }
  std::vector<VisibleGpu> unused() const { return unused_; }

  // The lowest free group, waiting for one: nullopt when `stop` (polled) turns
  // true or `deadline_s` passes first, or when there are no groups.
  std::optional<size_t> acquire(const std::function<bool()>& stop, double deadline_s);
  void release(size_t i);

 private:
  std::vector<std::vector<VisibleGpu>> groups_;
  std::vector<VisibleGpu> unused_;
  std::vector<bool> busy_;
  std::mutex mu_;
  std::condition_variable freed_;
};

// Releases its group when it goes out of scope.
class GpuLease {
 public:
  GpuLease(GpuPool& pool, size_t group) : pool_(&pool), group_(group) {}
  GpuLease(GpuLease&& o) noexcept : pool_(o.pool_), group_(o.group_) { o.pool_ = nullptr; }
  GpuLease(const GpuLease&) = delete;
  GpuLease& operator=(const GpuLease&) = delete;
  GpuLease& operator=(GpuLease&&) = delete;
  ~GpuLease() { if (pool_) pool_->release(group_); }
  size_t group() const { return group_; }

 private:
  GpuPool* pool_;
  size_t group_;
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
