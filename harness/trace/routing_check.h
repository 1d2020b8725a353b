#pragma once
// Routing verification: did the kernels that ran match what the flags asked for?
// A flag such as NSA_USE_CUDA_WIN=1 declares which kernels must launch (the
// fused window kernel) and which must not (the ATen fallback); the kernel table
// says what did. Patterns are shell globs (fnmatch) matched against the raw and
// the demangled kernel name, so "*nsa_window_fwd*" matches either form.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/trace_summary.h"
#include "harness/trace/trace_event.h"

namespace harness::trace {

struct RoutingExpectation {
  std::string flag;                          // "NSA_USE_CUDA_WIN=1"
  std::vector<std::string> must_launch;      // each pattern must match ≥ 1 launch
  std::vector<std::string> must_not_launch;  // no launch may match
};

enum class RoutingMismatchKind { missing, unexpected };

struct RoutingMismatch {
  RoutingMismatchKind kind = RoutingMismatchKind::missing;
  std::string flag;
  std::string pattern;
  std::uint64_t count = 0;             // launches matching (0 for missing)
  std::vector<std::string> kernels;    // display names that matched (unexpected)
  std::string message;                 // one line for the report
};

// Mismatches in expectation order (each must_launch, then each must_not_launch).
std::vector<RoutingMismatch> check_routing(const std::vector<RoutingExpectation>& expected,
                                           const std::vector<KernelRow>& kernels);

bool kernel_matches(const std::string& pattern, const KernelRow& row);
std::string_view to_string(RoutingMismatchKind k);
void to_json(nlohmann::json& j, const RoutingMismatch& m);
void from_json(const nlohmann::json& j, RoutingExpectation& e);

}  // namespace harness::trace
