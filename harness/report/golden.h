#pragma once
// Line-by-line comparison of rendered text against a hand-written golden file.
// `{{num}}` in a golden line matches one number as the writers print it
// (digits, sign, point, exponent, NaN, inf), for values a test does not pin.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace harness::testing {

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

inline bool line_matches(const std::string& golden, const std::string& actual) {
  const std::string kNum = "{{num}}";
  if (golden.find(kNum) == std::string::npos) return golden == actual;
  std::string pattern;
  size_t pos = 0;
  for (size_t at; (at = golden.find(kNum, pos)) != std::string::npos; pos = at + kNum.size()) {
    for (char c : golden.substr(pos, at - pos)) {
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) pattern += '\\';
      pattern += c;
    }
    pattern += "(-?[0-9]+(\\.[0-9]+)?(e[-+]?[0-9]+)?|NaN|-?inf)";
  }
  for (char c : golden.substr(pos)) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) pattern += '\\';
    pattern += c;
  }
  return std::regex_match(actual, std::regex(pattern));
}

// Reports the first differing line with its number, both versions and the whole output.
inline ::testing::AssertionResult matches_golden(const std::string& golden, const std::string& actual) {
  auto g = split_lines(golden), a = split_lines(actual);
  for (size_t i = 0; i < std::max(g.size(), a.size()); ++i) {
    std::string gl = i < g.size() ? g[i] : "<end of golden>";
    std::string al = i < a.size() ? a[i] : "<end of output>";
    if (i >= g.size() || i >= a.size() || !line_matches(gl, al))
      return ::testing::AssertionFailure() << "line " << i + 1 << " differs\n  golden: " << gl
                                           << "\n  actual: " << al << "\n--- whole output ---\n" << actual;
  }
  if (!golden.empty() && !actual.empty() && (golden.back() == '\n') != (actual.back() == '\n'))
    return ::testing::AssertionFailure() << "final newline differs";
  return ::testing::AssertionSuccess();
}

}  // namespace harness::testing
