#include "harness/run/shard.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace harness::run {
namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

ShardSlice parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  ShardSlice s;
  if (slash == std::string_view::npos || !parse_int(text.substr(0, slash), s.index) ||
      !parse_int(text.substr(slash + 1), s.count))
    throw ShardError(fmt::format("--shard '{}': expected I/N, e.g. 0/4 for the first of four slices", text));
  if (s.count < 1) throw ShardError(fmt::format("--shard '{}': N must be at least 1", text));
  if (s.index < 0 || s.index >= s.count)
    throw ShardError(fmt::format("--shard '{}': I must be in 0..{} (slices count from 0)", text, s.count - 1));
  return s;
}

std::vector<CellSpec> shard_cells(const std::vector<CellSpec>& cells, ShardSlice s) {
  std::vector<std::string> ids;
  for (const auto& c : cells) ids.push_back(c.id);
  std::sort(ids.begin(), ids.end());
  std::vector<CellSpec> out;
  for (const auto& c : cells) {
    const auto rank = std::lower_bound(ids.begin(), ids.end(), c.id) - ids.begin();
    if (rank % s.count == s.index) out.push_back(c);
  }
  return out;
}

ShardInfo shard_info(const std::vector<CellSpec>& cells, ShardSlice s, const std::string& scenario_hash,
                     const std::string& revision) {
  ShardInfo info;
  info.index = s.index;
  info.count = s.count;
  for (const auto& c : cells) info.matrix_cells.push_back(c.id);
  info.scenario_hash = scenario_hash;
  info.revision = revision;
  return info;
}

}  // namespace harness::run
