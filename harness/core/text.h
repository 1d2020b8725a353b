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

// `s` as one POSIX shell word: single quotes, each ' written as '\''. Inside
// single quotes nothing ($(...), `...`, $VAR, globs) is expanded, so a printed
// repro command pasted into a shell passes exactly these bytes as one argument.
inline std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace harness
