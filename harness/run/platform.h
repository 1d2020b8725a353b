#pragma once
// What the run ran on: host, GPU (via nvidia-smi when present), CUDA, libtorch,
// git revision, date. Every external command runs under `timeout`.
#include <string>

#include <nlohmann/json.hpp>

namespace harness::run {
nlohmann::json detect_platform();
std::string now_iso8601();
std::string now_compact();  // 20261122-041500, for run directory names
// The harness's git revision ("-dirty" when modified; NSA_HARNESS_REVISION overrides).
std::string source_revision();
}  // namespace harness::run
