#pragma once
// The comparison behind the routing probe: which implementation each branch
// should run, derived from what the cell *asked for* — never from the model's
// own reading of its flags, which is exactly what a routing bug gets wrong.
#include <map>
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"

namespace harness {

// Every registered flag's requested value: the cell's matrix axes (the
// `prefill` axis is NSA_PREFILL_BATCHED), then its `flags:`, then the
// environment the run was started with (`environment`: NSA_* name → value),
// then the registry's default.
class RequestedFlags {
 public:
  RequestedFlags(const CellSpec& spec, const std::map<std::string, std::string>& environment);
  bool on(const std::string& name) const;
  std::string value(const std::string& name) const;
  RequestedFlags with(const std::string& name, const std::string& value) const;  // one flag changed

 private:
  RequestedFlags() = default;
  std::map<std::string, std::string> values_;
};

// NSA_* variables of this process's environment.
std::map<std::string, std::string> nsa_environment();

// The implementation a branch ("cmp", "slc", "win") reports when the flags are
// followed: "reference", "sequential", "cuda.decode" (sequential on CUDA),
// "cuda.<branch>", "batched.pack", "batched.mask" or "batched"; the block's
// MLP ("mlp"): "cuda.swiglu" or "aten"; its residual adds with the norms after
// them ("norm"): "cuda.add_rms_norm" or "aten".
std::string expected_route(const std::string& branch, const RequestedFlags& flags, bool on_cuda);

struct RouteVerdict {
  std::string branch, ran, expected;
  std::string deciding_flag;  // "NAME=value" that selects `expected`
  std::string ignored_flag;   // "NAME=value" requested, where `ran` is what the opposite value gives; "" if none
  bool ok = true;
};

// One verdict per branch that reported a route.
std::vector<RouteVerdict> check_routes(const RequestedFlags& flags, bool on_cuda,
                                       const std::map<std::string, std::string>& ran);

}  // namespace harness
