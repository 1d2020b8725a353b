#pragma once
// Levenshtein distance, for the "did you mean" of every name a person types
// (config keys, flags, scenario keys).
#include <algorithm>
#include <string_view>
#include <vector>

namespace nsa {

inline size_t edit_distance(std::string_view a, std::string_view b) {
  // The distance is at least the length difference; a suggestion never needs more
  // than a few edits, so a name far longer than every candidate (a pasted line,
  // a hostile file) answers at once instead of costing length × length.
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > 8) return gap;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace nsa
