#pragma once
// "a, b,c" → {"a", "b", "c"}: the comma-separated lists of names that
// NSA_FAULT and NSA_MUTATION carry (blanks around names dropped, empty items skipped).
#include <string>
#include <string_view>
#include <vector>

namespace nsa {

inline std::vector<std::string> split_name_list(std::string_view csv) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t comma = csv.find(',', start);
    std::string_view item = csv.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    if (a != std::string_view::npos) names.emplace_back(item.substr(a, b - a + 1));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

}  // namespace nsa
