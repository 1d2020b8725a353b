#include "harness/run/platform.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstdio>
#include <ctime>

#ifndef NSA_SOURCE_DIR
#define NSA_SOURCE_DIR "."
#endif

namespace harness::run {
namespace {
// First line of a shell command's output, bounded by `timeout` so a wedged tool cannot hang the harness.
std::string first_line(const std::string& cmd) {
  std::string full = "timeout 10 " + cmd + " 2>/dev/null";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return "";
  std::array<char, 512> buf{};
  std::string out;
  if (fgets(buf.data(), buf.size(), p)) out = buf.data();
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}
std::string time_fmt(const char* f) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, f, &tm);
  return buf;
}
}  // namespace

std::string now_iso8601() { return time_fmt("%Y-%m-%dT%H:%M:%SZ"); }
std::string now_compact() { return time_fmt("%Y%m%d-%H%M%S"); }

// The revision a report names. A tree with modified tracked files is not that
// commit: "-dirty" says so. NSA_HARNESS_REVISION overrides both, for a copy of
// the tree whose .git does not describe it (a build machine fed by rsync).
std::string source_revision() {
  if (const char* given = std::getenv("NSA_HARNESS_REVISION"); given && *given) return given;
  const std::string git = std::string("git -C ") + NSA_SOURCE_DIR;
  std::string rev = first_line(git + " rev-parse --short HEAD 2>/dev/null");
  if (rev.empty()) return "unknown";
  if (!first_line(git + " status --porcelain --untracked-files=no 2>/dev/null").empty()) rev += "-dirty";
  return rev;
}

nlohmann::json detect_platform() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  nlohmann::json p = {{"host", host},
                      {"date", now_iso8601()},
                      {"libtorch", TORCH_VERSION},
                      {"cpu_threads", at::get_num_threads()},
                      {"git", source_revision()}};
  std::string gpu = first_line("nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader");
  if (!gpu.empty()) {
    auto c1 = gpu.find(", "), c2 = gpu.rfind(", ");
    p["gpu"] = gpu.substr(0, c1);
    if (c1 != std::string::npos && c2 != c1) p["sm"] = gpu.substr(c1 + 2, c2 - c1 - 2);
    if (c2 != std::string::npos) p["driver"] = gpu.substr(c2 + 2);
    std::string cuda = first_line("nvcc --version | grep -o 'release [0-9.]*'");
    if (!cuda.empty()) p["cuda"] = cuda.substr(8);
  } else {
    p["gpu"] = "none (CPU)";
  }
  return p;
}

}  // namespace harness::run
