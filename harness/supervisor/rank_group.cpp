#include "harness/supervisor/rank_group.h"

#include <atomic>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "harness/core/atomic_file.h"
#include "harness/protocol/events.h"
#include "harness/supervisor/rank_port.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;

bool ended_badly(const SupervisedRun& r) {
  return !r.launch_error.empty() || r.killed_by != KillReason::none || r.term_signal ||
         r.exit_code.value_or(0) != 0;
}

}  // namespace

SupervisedRun supervise_rank_group(const CellSpec& cell, const ArgvBuilder& argv, const RunOptions& opt,
                                   const std::string& dir, int slot) {
  const int world = cell.train.world_size;
  SupervisedRun group;
  group.cell_dir = dir;
  group.artifacts_relative_to = opt.run_dir;
  std::optional<PortLease> port;
  try {
    fs::create_directories(dir);
    // The cell's own spec beside the ranks' copies: repro and resume read it here.
    write_file_atomic(dir + "/" + protocol::kCellSpecFile, nlohmann::json(cell).dump(2) + "\n");
    port.emplace();
  } catch (const std::exception& e) {
    group.launch_error = fmt::format("preparing cell '{}' in {}: {}", cell.id, dir, e.what());
    return group;
  }

  std::atomic<bool> stop_group{false};
  std::atomic<int> first_bad{-1};
  std::vector<SupervisedRun> runs(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      // Each rank is spawned, watched and reaped on this thread (PR_SET_PDEATHSIG
      // is tied to the spawning thread, which outlives its child).
      RunOptions o = opt;
      o.env["RANK"] = std::to_string(r);
      o.env["LOCAL_RANK"] = std::to_string(r);
      o.env["WORLD_SIZE"] = std::to_string(world);
      o.env["MASTER_ADDR"] = "127.0.0.1";
      o.env["MASTER_PORT"] = std::to_string(port->port());
      o.cancelled = [&] { return stop_group.load() || (opt.cancelled && opt.cancelled()); };
      SupervisedRun run = supervise_process(cell, argv, o, dir + "/" + kRankDirPrefix + std::to_string(r), slot);
      const bool user_cancel = opt.cancelled && opt.cancelled();
      if (run.killed_by == KillReason::cancelled && !user_cancel) run.stopped_with_group = true;
      if (ended_badly(run) && !run.stopped_with_group && !user_cancel) {
        int none = -1;
        first_bad.compare_exchange_strong(none, r);
        stop_group = true;
      }
      runs[static_cast<size_t>(r)] = std::move(run);
    });
  }
  for (auto& t : threads) t.join();

  const int decider = first_bad.load() >= 0 ? first_bad.load() : 0;
  group = runs[static_cast<size_t>(decider)];
  group.ranks = std::move(runs);
  group.stopped_with_group = false;
  // A user's cancel cancels the cell; a rank stopped because another failed does not.
  if (group.killed_by == KillReason::cancelled && !(opt.cancelled && opt.cancelled())) group.killed_by = KillReason::none;
  for (auto& r : group.ranks) group.wall_s = std::max(group.wall_s, r.wall_s);
  return group;
}

}  // namespace harness::supervisor
