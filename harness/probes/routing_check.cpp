#include "harness/probes/routing_check.h"

#include <unistd.h>  // environ

#include <cstdlib>
#include <cstring>

#include "nsa/flags.h"

namespace harness {
namespace {

std::string cuda_flag(const std::string& branch) {
  return branch == "slc" ? "NSA_USE_CUDA_SEL" : branch == "win" ? "NSA_USE_CUDA_WIN" : "NSA_USE_CUDA_CMP";
}

// The flags that decide a branch's route, in the order they take precedence.
std::vector<std::string> deciding_flags(const std::string& branch, bool on_cuda) {
  if (branch == "mlp") return {"NSA_FUSED_MLP"};
  if (branch == "norm") return {"NSA_FUSED_NORM"};
  std::vector<std::string> f = {"NSA_FORCE_PARITY", "NSA_PREFILL_BATCHED"};
  if (on_cuda) f.push_back("NSA_USE_CUDA_DECODE"), f.push_back(cuda_flag(branch));
  if (branch == "slc") f.push_back("NSA_USE_SEL_MASK");
  return f;
}

std::string setting(const RequestedFlags& flags, const std::string& name) { return name + "=" + flags.value(name); }

}  // namespace

RequestedFlags::RequestedFlags(const CellSpec& spec, const std::map<std::string, std::string>& environment) {
  for (auto& f : nsa::flag_registry()) values_[std::string(f.name)] = std::string(f.default_value);
  for (auto& [name, value] : environment)
    if (nsa::find_flag(name)) values_[name] = value;
  for (auto& [name, value] : spec.flags) values_[name] = value;
  for (auto& [axis, value] : spec.axes) {
    if (axis == "prefill") values_["NSA_PREFILL_BATCHED"] = value == "batched" ? "1" : "0";
    else if (nsa::find_flag(axis)) values_[axis] = value;
  }
}

bool RequestedFlags::on(const std::string& name) const {
  auto v = value(name);
  return v == "1" || v == "true";
}

std::string RequestedFlags::value(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

RequestedFlags RequestedFlags::with(const std::string& name, const std::string& value) const {
  RequestedFlags r = *this;
  r.values_[name] = value;
  return r;
}

std::map<std::string, std::string> nsa_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "NSA_", 4) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (eq) out[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return out;
}

// Written again from the flags' documented meaning on purpose, never shared
// with the layer's own choose_path: the probe is an independent oracle, and a
// routing rule shared with the code under test would agree with its bugs.
std::string expected_route(const std::string& branch, const RequestedFlags& flags, bool on_cuda) {
  // The block's MLP and its residual adds + norms are not attention branches:
  // no attention path flag moves them.
  if (branch == "mlp") return on_cuda && flags.on("NSA_FUSED_MLP") ? "cuda.swiglu" : "aten";
  if (branch == "norm") return on_cuda && flags.on("NSA_FUSED_NORM") ? "cuda.add_rms_norm" : "aten";
  if (flags.on("NSA_FORCE_PARITY")) return "reference";
  // Sequential prefill: on CUDA the decode kernels unless NSA_USE_CUDA_DECODE=0.
  if (!flags.on("NSA_PREFILL_BATCHED")) return on_cuda && flags.on("NSA_USE_CUDA_DECODE") ? "cuda.decode" : "sequential";
  if (on_cuda && flags.on(cuda_flag(branch))) return "cuda." + branch;
  if (branch == "slc") return flags.on("NSA_USE_SEL_MASK") ? "batched.mask" : "batched.pack";
  return "batched";
}

std::vector<RouteVerdict> check_routes(const RequestedFlags& flags, bool on_cuda,
                                       const std::map<std::string, std::string>& ran) {
  std::vector<RouteVerdict> out;
  for (auto& [branch, impl] : ran) {
    RouteVerdict v;
    v.branch = branch, v.ran = impl, v.expected = expected_route(branch, flags, on_cuda);
    v.ok = v.ran == v.expected;
    // The flag that selects the expected route: the most specific one (last in
    // precedence order) whose opposite value would route elsewhere.
    for (auto& name : deciding_flags(branch, on_cuda)) {
      const auto flipped = flags.with(name, flags.on(name) ? "0" : "1");
      const auto other = expected_route(branch, flipped, on_cuda);
      if (other != v.expected) v.deciding_flag = setting(flags, name);
      if (!v.ok && v.ignored_flag.empty() && other == v.ran) v.ignored_flag = setting(flags, name);
    }
    if (v.deciding_flag.empty()) v.deciding_flag = setting(flags, "NSA_PREFILL_BATCHED");
    out.push_back(v);
  }
  return out;
}

}  // namespace harness
