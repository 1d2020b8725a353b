#include "harness/supervisor/sanitizer_log.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "harness/core/text.h"

namespace harness::supervisor {
namespace {

// The text after the "=========" prefix, or nullopt for lines the tool did not write.
std::optional<std::string> tool_line(std::string_view line) {
  constexpr std::string_view kPrefix = "=========";
  if (!starts_with(line, kPrefix)) return std::nullopt;
  return trim(line.substr(kPrefix.size()));
}

// "file.cu:95" or "/a/b/file.cu:95" at the start of `s`: the length of that
// prefix (through the line number), 0 when `s` does not start with one.
size_t source_prefix(std::string_view s) {
  size_t colon = s.find(':');
  while (colon != std::string_view::npos) {
    size_t end = colon + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end > colon + 1 && s.substr(0, colon).find(' ') == std::string_view::npos) return end;
    colon = s.find(':', colon + 1);
  }
  return 0;
}

// Splits a frame line's text after "at " into function and source.
void parse_frame(std::string_view rest, SanitizerReport& r) {
  if (starts_with(rest, "0x")) {  // "0x70 in <source:line:function | function>"
    size_t in = rest.find(" in ");
    if (in == std::string_view::npos) return;
    std::string_view what = rest.substr(in + 4);
    if (size_t n = source_prefix(what); n > 0 && n < what.size() && what[n] == ':') {
      r.source = std::string(what.substr(0, n));
      r.function = trim(what.substr(n + 1));
    } else {
      r.function = trim(what);
    }
    return;
  }
  // "<function>+0x70 in <source>": the offset marks where the function ends.
  size_t plus = rest.rfind("+0x");
  if (plus == std::string_view::npos) {
    r.function = trim(rest);
    return;
  }
  r.function = trim(rest.substr(0, plus));
  size_t in = rest.find(" in ", plus);
  if (in != std::string_view::npos) r.source = trim(rest.substr(in + 4));
}

}  // namespace

SanitizerReport parse_sanitizer_log(std::string_view text) {
  SanitizerReport r;
  std::istringstream in{std::string(text)};
  bool in_first_error = false;
  std::string outermost;  // last device frame of the first error
  for (std::string raw; std::getline(in, raw);) {
    auto line = tool_line(raw);
    if (!line) continue;
    const std::string& l = *line;
    if (starts_with(l, "ERROR SUMMARY:")) {
      std::istringstream n(l.substr(14));
      int count = 0;
      if (n >> count) r.errors = count;
      continue;
    }
    if (starts_with(l, "Program hit") && r.api_error.empty()) {
      r.api_error = l;
      continue;
    }
    if (r.first_error.empty() && (starts_with(l, "Invalid ") || starts_with(l, "Out-of-range") ||
                                  starts_with(l, "Misaligned") || starts_with(l, "Uninitialized") ||
                                  starts_with(l, "Malloc/Free") || starts_with(l, "Hardware exception") ||
                                  starts_with(l, "Warp ") || starts_with(l, "Illegal"))) {
      r.first_error = l;
      in_first_error = true;
      continue;
    }
    if (!in_first_error) continue;
    if (l.empty()) {
      in_first_error = false;
    } else if (starts_with(l, "at ") && r.function.empty()) {
      parse_frame(std::string_view(l).substr(3), r);
    } else if ((starts_with(l, "Address ") || starts_with(l, "Access to ")) && r.address.empty()) {
      r.address = l;
    } else if (starts_with(l, "Device Frame:")) {
      SanitizerReport frame;
      parse_frame(trim(std::string_view(l).substr(13)), frame);
      if (!frame.function.empty()) outermost = frame.function;
    } else if (starts_with(l, "Saved host backtrace")) {
      in_first_error = false;
    }
  }
  if (!r.function.empty()) r.access_in = short_kernel_name(r.function);
  r.kernel = outermost.empty() ? r.access_in : short_kernel_name(outermost);
  return r;
}

std::string find_compute_sanitizer() {
  auto executable = [](const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; };
  if (const char* env = std::getenv("NSA_COMPUTE_SANITIZER")) return executable(env) ? env : "";
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const auto& d : dirs)
    if (executable(d + "/compute-sanitizer")) return d + "/compute-sanitizer";
  return "";
}

}  // namespace harness::supervisor
