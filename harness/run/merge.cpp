#include "harness/run/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/report/render_all.h"
#include "harness/run/run_dir.h"
#include "harness/supervisor/runner.h"

namespace harness::run {
namespace fs = std::filesystem;
namespace {

std::string scenario_name(const RunResult& r) { return r.scenario.value("name", std::string("?")); }

// The first shard with results sets what every other one must match.
void check_same_matrix(const ShardRun& first, const ShardRun& other) {
  const ShardInfo& a = *first.result->shard;
  const ShardInfo& b = *other.result->shard;
  auto refuse = [&](const std::string& what, const std::string& va, const std::string& vb) {
    throw MergeRefused(fmt::format("{} and {} are shards of different runs: {} {} vs {}; merge only shards of one "
                                   "`run --shard I/N` matrix", first.dir, other.dir, what, va, vb));
  };
  if (a.scenario_hash != b.scenario_hash)
    refuse("scenario hash", a.scenario_hash + " (" + scenario_name(*first.result) + ")",
           b.scenario_hash + " (" + scenario_name(*other.result) + ")");
  if (a.revision != b.revision) refuse("harness revision", a.revision, b.revision);
  if (a.count != b.count) refuse("slice count", std::to_string(a.count), std::to_string(b.count));
  if (a.matrix_cells != b.matrix_cells)
    refuse("cell list", fmt::format("{} cells", a.matrix_cells.size()),
           fmt::format("{} cells (another --only or matrix)", b.matrix_cells.size()));
  if (a.index == b.index)
    throw MergeRefused(fmt::format("{} and {} are both shard {}/{}: each slice once", first.dir, other.dir, a.index,
                                   a.count));
}

}  // namespace

std::vector<ShardRun> read_shards(const std::vector<std::string>& dirs) {
  std::vector<ShardRun> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw MergeRefused(d + ": not a run directory");
    ShardRun s{d, std::nullopt};
    if (fs::exists(fs::path(d) / "results.json", ec)) {
      try {
        s.result = load_results(d);
      } catch (const std::exception& e) {
        throw MergeRefused(e.what());
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

RunResult merge_shards(const std::vector<ShardRun>& shards) {
  const ShardRun* first = nullptr;
  for (const auto& s : shards) {
    if (!s.result) continue;
    if (!s.result->shard)
      throw MergeRefused(s.dir + "/results.json is not a shard (it was not run with --shard I/N)");
    if (!first) first = &s;
    else check_same_matrix(*first, s);
  }
  if (!first)
    throw MergeRefused(fmt::format("none of the {} director{} holds a results.json: nothing to merge", shards.size(),
                                   shards.size() == 1 ? "y" : "ies"));
  // Each shard once, even when it finished nothing: a directory given twice is a mistake.
  std::set<std::string> seen;
  for (const auto& s : shards)
    if (!seen.insert(fs::weakly_canonical(s.dir).string()).second)
      throw MergeRefused(s.dir + " is given twice");

  const ShardInfo& info = *first->result->shard;
  RunResult merged;
  merged.scenario = first->result->scenario;
  merged.platform = first->result->platform;
  merged.started_at = first->result->started_at;
  std::map<std::string, const CellResult*> found;
  for (const auto& s : shards) {
    if (!s.result) continue;
    const RunResult& r = *s.result;
    if (!r.started_at.empty() && (merged.started_at.empty() || r.started_at < merged.started_at))
      merged.started_at = r.started_at;  // ISO 8601 in UTC: text order is time order
    merged.wall_s = std::max(merged.wall_s, r.wall_s);
    merged.merged_from.push_back(MergeSource{r.shard->index, s.dir, static_cast<int>(r.cells.size())});
    for (const auto& c : r.cells) {
      if (std::find(info.matrix_cells.begin(), info.matrix_cells.end(), c.id) == info.matrix_cells.end())
        throw MergeRefused(fmt::format("{}: cell '{}' is not in the shard's own matrix", s.dir, c.id));
      if (!found.emplace(c.id, &c).second)
        throw MergeRefused(fmt::format("cell '{}' is in two shards (the second: {})", c.id, s.dir));
    }
  }
  std::sort(merged.merged_from.begin(), merged.merged_from.end(),
            [](const MergeSource& a, const MergeSource& b) { return a.shard_index < b.shard_index; });
  for (const auto& id : info.matrix_cells) {
    auto it = found.find(id);
    if (it == found.end()) merged.completion.not_run.push_back(id);
    else merged.cells.push_back(*it->second);
  }
  if (!merged.completion.not_run.empty()) merged.completion.end = RunEnd::cells_missing;
  return merged;
}

void copy_merged_cells(const RunResult& merged, const std::vector<ShardRun>& shards, const std::string& out_dir) {
  std::set<std::string> wanted;
  for (const auto& c : merged.cells) wanted.insert(c.id);
  for (const auto& s : shards) {
    if (!s.result) continue;
    for (const auto& c : s.result->cells)
      if (wanted.count(c.id)) copy_cell_dir(s.dir, out_dir, c.id);
  }
}

void check_merge_output(const std::vector<std::string>& dirs, const std::string& out_dir) {
  const fs::path out = fs::weakly_canonical(out_dir);
  for (const auto& d : dirs) {
    const fs::path shard = fs::weakly_canonical(d);
    auto [a, b] = std::mismatch(shard.begin(), shard.end(), out.begin(), out.end());
    if (a == shard.end())
      throw MergeRefused(fmt::format("--out {} is inside the shard {}: choose a directory outside every shard", out_dir, d));
  }
}

}  // namespace harness::run
