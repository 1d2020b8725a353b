#include "harness/run/spec_hash.h"

#include <cstdint>

#include <fmt/format.h>

namespace harness::run {

std::string cell_spec_hash(const CellSpec& cell) {
  nlohmann::json j = cell;
  j.erase("scenario_file");
  const std::string text = j.dump();  // keys sorted: the same spec always serializes alike
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace harness::run
