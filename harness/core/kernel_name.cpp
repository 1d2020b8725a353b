#include "harness/core/kernel_name.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <memory>

#include "harness/core/text.h"

namespace harness {
namespace {

// The last complete <length><identifier> of a nested name "_ZN…", or "".
std::string last_identifier(std::string_view mangled) {
  std::string_view s = mangled.substr(3);  // after "_ZN"
  std::string last;
  size_t i = 0;
  while (i < s.size()) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;  // qualifiers, template markers: skip
      continue;
    }
    size_t len = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) len = len * 10 + (s[i++] - '0');
    if (i + len > s.size()) break;  // cut inside this identifier
    last = std::string(s.substr(i, len));
    if (last.rfind("_GLOBAL__N_", 0) != 0 && i + len < s.size() && s[i + len] == 'I') break;  // template args follow
    i += len;
  }
  return last;
}

}  // namespace

std::string short_kernel_name(std::string_view f) {
  std::string s = trim(f);
  if (starts_with(s, "void ")) s = s.substr(5);
  // Drop the parameter list: the last top-level "(...)" at the end.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s.resize(i);
        break;
      }
    }
  }
  // The last "::" outside template brackets and parentheses starts the name.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && s[i + 1] == ':') start = i + 2;
  }
  return trim(std::string_view(s).substr(start));
}

std::string readable_kernel_name(std::string_view symbol) {
  if (!starts_with(symbol, "_Z")) return short_kernel_name(symbol);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(std::string(symbol).c_str(), nullptr, nullptr, &status),
                                             std::free);
  if (status == 0 && out) return short_kernel_name(out.get());
  if (starts_with(symbol, "_ZN")) {
    std::string id = last_identifier(symbol);
    if (!id.empty()) return id + "…";
  }
  return std::string(symbol);
}

}  // namespace harness
