#include "harness/analysis/axis_settings.h"

#include "nsa/flags.h"

namespace harness {

namespace {
bool is_flag(const std::string& axis) { return axis.rfind("NSA_", 0) == 0; }
}  // namespace

std::string describe_setting(const std::string& axis, const std::string& value) {
  if (is_flag(axis)) return axis + "=" + value;
  std::string s = axis + "=" + value;
  // The one axis that stands for a flag under another name (scenario-format.md).
  if (axis == "prefill") {
    if (value == "batched") s += " (NSA_PREFILL_BATCHED=1)";
    else if (value == "sequential") s += " (NSA_PREFILL_BATCHED=0)";
  }
  return s;
}

bool is_workaround_axis(const std::string& axis) {
  return is_flag(axis) || axis == "prefill" || axis == "precision" || axis == "master_weights" ||
         axis == "phi" || axis == "lr";
}

bool is_nsa_layer_only_axis(const std::string& axis) {
  const nsa::FlagInfo* flag = is_flag(axis) ? nsa::find_flag(axis) : nullptr;
  return flag && flag->reach == nsa::FlagReach::nsa_layer_only;
}

}  // namespace harness
