#include <unistd.h>

#include <filesystem>

#include "harness/cli/commands.h"

#ifndef NSA_SOURCE_DIR
#define NSA_SOURCE_DIR "."
#endif

namespace harness::cli {

std::string default_scenario_path() {
  // Prefer the working directory's scenarios/ (a checkout), then the source tree the binary was built from.
  if (std::filesystem::exists("scenarios/default.yaml")) return "scenarios/default.yaml";
  return std::string(NSA_SOURCE_DIR) + "/scenarios/default.yaml";
}

std::string self_executable(const char* argv0) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return p.string();
  return std::filesystem::absolute(argv0).string();
}

}  // namespace harness::cli
