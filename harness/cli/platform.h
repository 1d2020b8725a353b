#pragma once
// What the run ran on: host, GPU (via nvidia-smi when present), CUDA, libtorch,
// git revision, date. Every external command runs under `timeout`.
#include <nlohmann/json.hpp>

namespace harness::cli {
nlohmann::json detect_platform();
std::string now_iso8601();
std::string now_compact();
// The harness's git revision ("-dirty" when modified; NSA_HARNESS_REVISION overrides).
std::string source_revision();  // 20261122-041500, for run directory names
}  // namespace harness::cli
