#include "harness/trace/trace_recovery.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace harness::trace {

std::string recover_trace_text(const std::string& text, TraceRecovery* info) {
  TraceRecovery local;
  TraceRecovery& r = info ? *info : local;
  r = {};
  std::size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return "[]\n";  // killed before the writer's first byte
  if (text[i] != '[') throw std::runtime_error("not a JSON array trace (first byte '" +
                                               std::string(1, text[i]) + "')");
  if (nlohmann::json::accept(text)) {
    r.was_strict = true;
    r.objects_kept = nlohmann::json::parse(text).size();
    return text;
  }
  // Scan the array's top level; remember where the last complete object ended.
  std::size_t last_end = i + 1;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t p = i + 1; p < text.size(); ++p) {
    const char c = text[p];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;  // the array's own ']' after a bad element: stop here
      if (--depth == 0) {
        last_end = p + 1;
        ++r.objects_kept;
      }
    }
  }
  r.bytes_trimmed = text.size() - last_end;
  std::string out = text.substr(0, last_end) + "\n]\n";
  if (!nlohmann::json::accept(out)) {
    throw std::runtime_error("trace is damaged before its last complete object");
  }
  return out;
}

TraceRecovery recover_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("recovering trace " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  TraceRecovery info;
  std::string out;
  try {
    out = recover_trace_text(ss.str(), &info);
  } catch (const std::exception& e) {
    throw std::runtime_error("recovering trace " + path + ": " + e.what());
  }
  if (info.was_strict) return info;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary | std::ios::trunc);
    os << out;
    if (!os.flush()) throw std::runtime_error("recovering trace " + path + ": cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("recovering trace " + path + ": cannot rename " + tmp);
  }
  return info;
}

}  // namespace harness::trace
