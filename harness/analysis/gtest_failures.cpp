#include "harness/analysis/gtest_failures.h"

#include <algorithm>
#include <cctype>

namespace harness {

std::vector<std::string> failed_gtest_names(std::string_view output) {
  constexpr std::string_view kTag = "[  FAILED  ] ";
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(kTag, 0) != 0) continue;
    line.remove_prefix(kTag.size());
    size_t stop = line.find_first_of(" ,");
    std::string name(line.substr(0, stop));
    // A test name is Suite.Test; the count line starts with a digit and has no dot.
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name.find('.') == std::string::npos)
      continue;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace harness
