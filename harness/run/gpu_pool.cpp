#include "harness/run/gpu_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

namespace harness::run {
namespace {
// How often a waiting cell looks at its stop predicate (a signal, a harness
// failure): the same cadence as the watchdog's polls.
constexpr auto kStopPoll = std::chrono::milliseconds(50);
}  // namespace

GpuPool::GpuPool(std::vector<VisibleGpu> gpus, int per_cell, int cells_per_gpu)
    : gpus_(std::move(gpus)),
      per_cell_(per_cell < 1 ? 1 : static_cast<size_t>(per_cell)),
      cells_per_gpu_(cells_per_gpu < 1 ? 1 : cells_per_gpu),
      holders_(gpus_.size(), 0) {}

int GpuPool::most_holders(const GpuBlock& b) const {
  int most = 0;
  for (size_t i = b.first; i < b.first + b.count && i < holders_.size(); ++i) most = std::max(most, holders_[i]);
  return most;
}

std::vector<VisibleGpu> GpuPool::unused() const {
  return std::vector<VisibleGpu>(gpus_.begin() + static_cast<long>(groups() * per_cell_), gpus_.end());
}

std::vector<VisibleGpu> GpuPool::gpus_of(const GpuBlock& b) const {
  if (b.first + b.count > gpus_.size()) return {};
  return std::vector<VisibleGpu>(gpus_.begin() + static_cast<long>(b.first),
                                 gpus_.begin() + static_cast<long>(b.first + b.count));
}

size_t GpuPool::count_for(int world_size) const {
  const size_t ranks = world_size < 1 ? 1 : static_cast<size_t>(world_size);
  return ranks > 1 && ranks <= gpus_.size() ? std::max(ranks, per_cell_) : per_cell_;
}

std::optional<GpuBlock> GpuPool::acquire(size_t count, const std::function<bool()>& stop, double deadline_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  if (count == 0 || count > gpus_.size()) return std::nullopt;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    for (size_t first = 0; first + count <= gpus_.size(); first += count) {
      GpuBlock b{first, count, 0};
      if (most_holders(b) >= cells_per_gpu_) continue;
      for (size_t i = first; i < first + count; ++i) ++holders_[i];
      b.ticket = next_ticket_++;
      leases_.emplace_back(b, most_holders(b));
      // Every lease on these GPUs now shares with one more cell.
      for (auto& [held, peak] : leases_) peak = std::max(peak, most_holders(held));
      return b;
    }
    if ((stop && stop()) || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    freed_.wait_for(lock, kStopPoll);
  }
}

int GpuPool::release(const GpuBlock& b) {
  int peak = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(leases_.begin(), leases_.end(), [&](const auto& l) { return l.first.ticket == b.ticket; });
    if (it == leases_.end()) return 0;  // not held (given back twice): nothing to free
    peak = it->second;
    leases_.erase(it);
    for (size_t i = b.first; i < b.first + b.count && i < holders_.size(); ++i) --holders_[i];
  }
  // Blocks of other sizes may wait on these GPUs: wake every waiter.
  freed_.notify_all();
  return peak;
}

std::string cuda_visible_devices(const std::vector<VisibleGpu>& group) {
  std::string s;
  for (const auto& g : group) s += (s.empty() ? "" : ",") + g.token;
  return s;
}

std::vector<GpuDevice> devices_of(const std::vector<VisibleGpu>& group) {
  std::vector<GpuDevice> out;
  for (const auto& g : group) out.push_back(g.device);
  return out;
}

bool needs_gpu(const CellSpec& cell, bool have_cuda) {
  return cell.device == "cuda" || (cell.device == "auto" && have_cuda);
}

GpuDiscovery gpus_for_cells(const std::vector<CellSpec>& cells, bool have_cuda, int per_cell) {
  // A CUDA cell on a machine without CUDA is a skip (execute.h): it takes no GPU.
  bool wanted = false;
  for (const auto& c : cells) wanted = wanted || (have_cuda && needs_gpu(c, have_cuda));
  if (!wanted && !std::getenv(kFakeGpusEnv)) return GpuDiscovery{{}, "none", {}};
  GpuDiscovery d = discover_gpus();
  if (!d.gpus.empty() && per_cell > static_cast<int>(d.gpus.size()))
    throw GpuListError(fmt::format("--gpus-per-cell {}: only {} GPU(s) visible here ({})", per_cell, d.gpus.size(),
                                   describe_gpus(d.gpus)));
  if (d.gpus.empty() && wanted)
    d.notes.push_back("no GPU listed (" + d.source + "); cells are not given GPUs of their own");
  else if (per_cell > 0 && d.gpus.size() % static_cast<size_t>(per_cell) != 0)
    d.notes.push_back(fmt::format("{} GPU(s) visible, {} per cell: {} stay unused", d.gpus.size(), per_cell,
                                  d.gpus.size() % static_cast<size_t>(per_cell)));
  return d;
}

}  // namespace harness::run
