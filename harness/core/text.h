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

// `s` as it is when the shell would read it as one word unchanged (the
// common case: paths, ids, options), else shell_quote(s): readable command
// lines that still paste safely.
inline std::string shell_word(std::string_view s) {
  auto plain = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  };
  bool all_plain = !s.empty();
  for (char c : s) all_plain = all_plain && plain(c);
  return all_plain ? std::string(s) : shell_quote(s);
}

}  // namespace harness
