#pragma once
// Small text helpers for reading what children, tools and scenario files wrote.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

inline std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The pieces of `s` between `sep`s, empty ones kept ("a,,b" → a, "", b), so a
// caller can refuse them.
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

}  // namespace harness
