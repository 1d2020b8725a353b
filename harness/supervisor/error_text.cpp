#include "harness/supervisor/error_text.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <cstring>
#include <regex>

#include "harness/core/text.h"

namespace harness::supervisor {
namespace {
using nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// One piece of text to search, remembering where it came from.
struct Text {
  std::string body;
  std::string source;
  std::string op;
  std::optional<int> step;
  std::string phase;
};

// The line of `body` holding the (lower-case) needle, or the whole body.
std::string line_with(const std::string& body, size_t at) {
  size_t b = body.rfind('\n', at);
  size_t e = body.find('\n', at);
  b = b == std::string::npos ? 0 : b + 1;
  return trim(body.substr(b, e == std::string::npos ? std::string::npos : e - b));
}

struct Rule {
  Outcome outcome;
  std::string_view reason;
  std::vector<std::string_view> needles;  // lower case
};

// Order matters: the first rule that matches any text decides.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      // Before the CUDA rules: "CUDA error: out of memory" is a size problem,
      // not a kernel bug, and the allocators' messages say how much was asked.
      {Outcome::error, reason::out_of_memory,
       {"out of memory", "outofmemoryerror", "not enough memory", "can't allocate memory", "cannot allocate memory",
        "bad_alloc", "cudaerrormemoryallocation"}},
      // A child built with a sanitizer reports its own memory error and exits 1
      // instead of dying of the signal: still a crash, with the report as evidence.
      {Outcome::crash, reason::sanitizer_report,
       {"addresssanitizer:", "undefinedbehaviorsanitizer:", "leaksanitizer:", "threadsanitizer:",
        "memorysanitizer:"}},
      {Outcome::crash, reason::cuda_illegal_address,
       {"an illegal memory access was encountered", "illegal address", "cudaerrorillegaladdress", "error 700",
        "error code 700"}},
      {Outcome::crash, reason::cuda_error,
       {"cuda error", "cudaerror", "cuda driver error", "cublas_status_", "cudnn_status_", "cudnn error",
        "device-side assert", "cuda_error_"}},
      {Outcome::error, reason::autograd_inplace, {"modified by an inplace operation"}},
      {Outcome::error, reason::index_out_of_range, {"index out of range", "out of bounds", "index_out_of_range"}},
      {Outcome::error, reason::exception,
       {"terminate called after throwing", "what():", "exception", "error:", "c10::error"}},
  };
  return r;
}

std::string autograd_op(const std::string& text) {
  // "... which is output 0 of SigmoidBackward0, is at version 2 ..."
  static const std::regex re(R"(output \d+ of ([A-Za-z_][A-Za-z0-9_:]*))");
  std::smatch m;
  return std::regex_search(text, m, re) ? m[1].str() : std::string();
}

void find_key(const json& j, const char* key, std::string& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == key && it->is_string()) out = it->get<std::string>();
      else find_key(*it, key, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) find_key(v, key, out);
  }
}
}  // namespace

namespace {
// "20.00 GiB", "512 MiB", "1099511627776 bytes" at the start of `text`.
std::optional<double> size_at(const std::string& text) {
  static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*(bytes|B|KiB|MiB|GiB|TiB))");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  double v = std::stod(m[1].str());
  const std::string unit = m[2].str();
  const double scale = unit == "KiB" ? 1024.0 : unit == "MiB" ? 1048576.0 : unit == "GiB" ? 1073741824.0
                       : unit == "TiB" ? 1099511627776.0 : 1.0;
  return v * scale;
}

// The size that follows the first of `markers` found in `text` (case as written).
std::optional<double> size_after(const std::string& text, std::initializer_list<const char*> markers) {
  for (const char* marker : markers) {
    size_t at = text.find(marker);
    if (at == std::string::npos) continue;
    // Bounded: a size is a few characters after its marker.
    if (auto v = size_at(text.substr(at + std::strlen(marker), 40))) return v;
  }
  return std::nullopt;
}
}  // namespace

OomSizes parse_oom_sizes(const std::string& message) {
  // CPU: "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1099511627776 bytes."
  // CUDA: "Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.25 GiB is free."
  OomSizes s;
  s.requested_bytes = size_after(message, {"tried to allocate", "Tried to allocate"});
  s.total_bytes = size_after(message, {"total capacity of"});
  s.free_bytes = size_after(message, {"of which"});
  return s;
}

std::optional<ErrorDiagnosis> diagnose_error_text(const std::vector<json>& errors, const std::string& stderr_tail) {
  std::vector<Text> texts;
  for (const auto& e : errors) {
    Text t;
    t.body = e.value("message", "");
    std::string kind = e.value("kind", "");
    if (!kind.empty()) t.body = kind + ": " + t.body;
    t.source = "error event";
    t.op = e.value("op", "");
    t.phase = e.value("phase", "");
    if (e.contains("step") && e["step"].is_number_integer()) t.step = e["step"].get<int>();
    texts.push_back(std::move(t));
  }
  if (!stderr_tail.empty()) texts.push_back({stderr_tail, "stderr.log", "", std::nullopt, ""});

  for (const auto& rule : rules()) {
    for (const auto& t : texts) {
      const std::string low = lower(t.body);
      for (auto needle : rule.needles) {
        size_t at = low.find(needle);
        if (at == std::string::npos) continue;
        ErrorDiagnosis d;
        d.outcome = rule.outcome;
        d.reason = std::string(rule.reason);
        d.message = t.source == "stderr.log" ? line_with(t.body, at) : trim(t.body);
        d.source = t.source;
        d.step = t.step;
        d.phase = t.phase;
        d.op = t.op;
        if (d.op.empty() && rule.reason == reason::autograd_inplace) d.op = autograd_op(t.body);
        return d;
      }
    }
  }
  // An error event that matches no pattern is still an exception the child caught.
  if (!texts.empty() && texts.front().source == "error event") {
    ErrorDiagnosis d;
    d.reason = std::string(reason::exception);
    d.message = trim(texts.front().body);
    d.source = "error event";
    d.op = texts.front().op;
    d.step = texts.front().step;
    d.phase = texts.front().phase;
    return d;
  }
  return std::nullopt;
}

std::string last_kernel_from(const std::vector<json>& events) {
  std::string kernel;
  for (const auto& e : events) {
    std::string kind = e.value("ev", "");
    if (kind == "error" || kind == "probe" || kind == "finding") find_key(e, "last_kernel", kernel);
  }
  return kernel;
}

std::string read_tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::streamoff size = in.tellg();
  std::streamoff from = size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(from);
  std::string out(static_cast<size_t>(size - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

}  // namespace harness::supervisor
