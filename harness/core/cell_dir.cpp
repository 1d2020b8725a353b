#include "harness/core/cell_dir.h"

#include <cstdint>

#include <fmt/format.h>

namespace harness {

namespace {
// Well under NAME_MAX (255) with room for the "~hash" suffix.
constexpr size_t kMaxDirName = 160;

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ',' || c == '=' || c == '+' || c == '-';
}

// FNV-1a: stable across compilers and runs, unlike std::hash.
std::string short_hash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return fmt::format("{:08x}", h);
}
}  // namespace

std::string cell_dir_name(const std::string& id) {
  std::string name;
  bool changed = false;
  for (char c : id) {
    name += safe_char(c) ? c : '_';
    changed |= !safe_char(c);
  }
  if (name.empty() || name[0] == '.' || name[0] == '-') {  // never ".", "..", hidden, or an option
    name.insert(name.begin(), '_');
    changed = true;
  }
  if (name.size() > kMaxDirName) {
    name.resize(kMaxDirName);
    changed = true;
  }
  return changed ? name + "~" + short_hash(id) : name;
}

}  // namespace harness
