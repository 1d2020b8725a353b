#include "harness/scenario/select.h"

#include <fnmatch.h>

#include <algorithm>

namespace harness {

std::vector<std::string> split_globs(const std::string& glob) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : glob + ";") {
    if (c == ';' || c == '|') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<CellSpec> select_cells(const std::vector<CellSpec>& cells, const std::string& glob) {
  auto patterns = split_globs(glob);
  if (patterns.empty()) return cells;
  std::vector<CellSpec> out;
  for (auto& c : cells) {
    // No FNM_PATHNAME: a `data=bytes:/x/y` value is part of the id, and '*' should span it.
    bool hit = std::any_of(patterns.begin(), patterns.end(),
                           [&](const std::string& p) { return fnmatch(p.c_str(), c.id.c_str(), 0) == 0; });
    if (hit) out.push_back(c);
  }
  return out;
}

}  // namespace harness
