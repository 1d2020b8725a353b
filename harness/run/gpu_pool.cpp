#include "harness/run/gpu_pool.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

namespace harness::run {
namespace {
// How often a waiting cell looks at its stop predicate (a signal, a harness
// failure): the same cadence as the watchdog's polls.
constexpr auto kStopPoll = std::chrono::milliseconds(50);
}  // namespace

GpuPool::GpuPool(std::vector<VisibleGpu> gpus, int per_cell) {
  const size_t k = per_cell < 1 ? 1 : static_cast<size_t>(per_cell);
  size_t i = 0;
  for (; i + k <= gpus.size(); i += k) groups_.emplace_back(gpus.begin() + i, gpus.begin() + i + k);
  unused_.assign(gpus.begin() + i, gpus.end());
  busy_.assign(groups_.size(), false);
}

std::optional<size_t> GpuPool::acquire(const std::function<bool()>& stop, double deadline_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  std::unique_lock<std::mutex> lock(mu_);
  while (!groups_.empty()) {
    for (size_t i = 0; i < busy_.size(); ++i)
      if (!busy_[i]) {
        busy_[i] = true;
        return i;
      }
    if ((stop && stop()) || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    freed_.wait_for(lock, kStopPoll);
  }
  return std::nullopt;
}

void GpuPool::release(size_t i) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_.at(i) = false;
  }
  freed_.notify_one();
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
