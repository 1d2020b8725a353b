#include "harness/supervisor/host_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace harness::supervisor {
namespace {

// "<key>:   1234 kB" in a /proc status-style file, in bytes.
std::optional<std::uint64_t> kb_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::uint64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

// A cgroup limit file holds a byte count, or "max" (v2) / a huge number (v1) for none.
std::optional<std::uint64_t> cgroup_limit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    const std::uint64_t v = std::stoull(text);
    if (v >= (std::uint64_t(1) << 60)) return std::nullopt;  // v1's "unlimited"
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::uint64_t> process_peak_rss_bytes(int pid) {
  return kb_field("/proc/" + std::to_string(pid) + "/status", "VmHWM");
}

std::optional<std::uint64_t> host_memory_limit_bytes() {
  std::optional<std::uint64_t> limit = kb_field("/proc/meminfo", "MemTotal");
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (auto c = cgroup_limit(path)) limit = limit ? std::min(*limit, *c) : *c;
  return limit;
}

std::string gib_text(std::uint64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / (1ull << 30)); }

}  // namespace harness::supervisor
