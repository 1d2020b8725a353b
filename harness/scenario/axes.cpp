#include "harness/scenario/axes.h"

#include <algorithm>
#include <filesystem>

#include "harness/core/text.h"
#include "harness/scenario/limits.h"
#include "nsa/faults.h"
#include "nsa/flags.h"

namespace harness {
namespace {

// Axes that are not flags, in the order the format doc lists them.
const std::vector<std::string> kSettingAxes = {"prefill", "precision", "seq_len", "batch", "steps",  "lr",
                                                "master_weights", "data", "model", "phi", "attention", "device", "fault",
                                                "probes", "world_size"};

std::vector<std::string> fault_names() {
  std::vector<std::string> names;
  for (auto& f : nsa::fault_registry()) names.emplace_back(f.name);
  return names;
}

std::optional<AxisValue> same(std::optional<std::string> v) {
  if (!v) return std::nullopt;
  return AxisValue{*v, *v};
}

// Integers go into ids in canonical form ("+64" and "064" are the cell "64").
std::optional<AxisValue> integer_value(std::optional<long long> v) {
  if (!v) return std::nullopt;
  return AxisValue{std::to_string(*v), std::to_string(*v)};
}

}  // namespace

std::vector<std::string> known_axis_names() {
  std::vector<std::string> names = kSettingAxes;
  for (auto& f : nsa::flag_registry()) names.emplace_back(f.name);
  return names;
}

bool is_axis_name(const std::string& name) {
  auto all = known_axis_names();
  return std::find(all.begin(), all.end(), name) != all.end();
}

std::optional<std::string> check_flag(const std::string& name, const Pos& name_pos, const YNode& value,
                                      const std::string& path, Checker& check) {
  const nsa::FlagInfo* flag = nsa::find_flag(name);
  if (!flag) {
    std::string hint = did_you_mean_ranked(nsa::close_flag_matches(name));
    check.error(name_pos, path, "unknown flag" + (hint.empty() ? " (see `nsa-harness list flags`)" : hint));
    return std::nullopt;
  }
  if (!value.is_scalar()) {
    check.error(value.pos, path, "expected a " + std::string(nsa::to_string(flag->type)) + " flag value, got " +
                                     value.describe());
    return std::nullopt;
  }
  // yaml-cpp hands us the text as written; an unquoted on/off/yes/no would be a
  // boolean to a YAML 1.1 reader and a string to a YAML 1.2 one.
  if (!value.quoted && is_yaml11_bool_word(value.text) && flag->type != nsa::FlagType::integer) {
    std::string fix = flag->type == nsa::FlagType::boolean ? "write 0 or 1 (or true/false)"
                                                           : "quote it if the text is meant";
    check.error(value.pos, path, "unquoted '" + value.text + "' is a YAML 1.1 boolean word; " + fix +
                                     " so the value is not guessed");
    return std::nullopt;
  }
  if (auto problem = nsa::check_flag_value(*flag, value.text)) {
    check.error(value.pos, path, *problem);
    return std::nullopt;
  }
  if (name == "NSA_FAULT") {
    for (const auto& item : split(value.text, ',')) {
      if (!item.empty() && !nsa::find_fault(item)) {
        check.error(value.pos, path, "unknown fault '" + item + "'" + did_you_mean(item, fault_names()));
        return std::nullopt;
      }
    }
  }
  return value.text;
}

std::optional<std::string> check_fault(const YNode& value, const std::string& path, Checker& check,
                                       bool allow_none) {
  if (!value.is_scalar()) {
    check.error(value.pos, path, "expected a fault name, got " + value.describe());
    return std::nullopt;
  }
  if (allow_none && value.text == "none") return value.text;
  if (nsa::find_fault(value.text)) return value.text;
  std::string hint = did_you_mean(value.text, fault_names());
  check.error(value.pos, path,
              "unknown fault '" + value.text + "'" + (hint.empty() ? " (see `nsa-harness list faults`)" : hint));
  return std::nullopt;
}

std::optional<std::string> check_probes_value(const YNode& value, const std::string& path, Checker& check) {
  if (!value.is_scalar() || value.text.empty()) {
    check.error(value.pos, path, "expected all, none, alternate or probe names joined by '+', got " + value.describe());
    return std::nullopt;
  }
  if (value.text == "all" || value.text == "none" || value.text == "alternate") return value.text;
  for (const auto& name : split(value.text, '+')) {
    if (std::find(probe_names().begin(), probe_names().end(), name) != probe_names().end()) continue;
    std::string hint = did_you_mean(name, probe_names());
    check.error(value.pos, path,
                "unknown probe '" + name + "' (expected all, none, alternate or probe names joined by '+')" +
                    (hint.empty() ? "; see `nsa-harness list probes`" : hint));
    return std::nullopt;
  }
  return value.text;
}

std::optional<std::string> check_data(const YNode& value, const std::string& path, Checker& check) {
  namespace fs = std::filesystem;
  if (value.is_scalar() && value.text == "synthetic") return value.text;
  const std::string prefix = "bytes:";
  if (!value.is_scalar() || value.text.rfind(prefix, 0) != 0 || value.text.size() == prefix.size()) {
    check.error(value.pos, path, "expected 'synthetic' or 'bytes:<file>', got " + value.describe());
    return std::nullopt;
  }
  // Past PATH_MAX the filesystem calls below fail (or throw) instead of answering.
  const size_t chars = value.text.size() - prefix.size();
  if (chars > kMaxExtendsPathChars) {
    check.error(value.pos, path, "data file path of " + std::to_string(chars) + " characters (at most " +
                                     std::to_string(kMaxExtendsPathChars) + ")");
    return std::nullopt;
  }
  fs::path file = value.text.substr(prefix.size());
  // Relative to the YAML file that names it, so a scenario runs from any directory.
  if (file.is_relative() && value.pos.file >= 0)
    file = fs::path(check.sources().file(value.pos.file).path).parent_path() / file;
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec);
  file = (ec ? file : absolute).lexically_normal();
  if (!fs::is_regular_file(file, ec)) {
    check.error(value.pos, path, "data file not found: " + file.string());
    return std::nullopt;
  }
  return prefix + file.string();
}

std::optional<AxisValue> check_axis_value(const std::string& axis, const YNode& value, const std::string& path,
                                          Checker& check, ModelLibrary& models) {
  if (axis == "prefill") return same(check.one_of(value, path, {"sequential", "batched"}));
  if (axis == "precision") return same(check.one_of(value, path, {"fp32", "bf16", "fp16"}));
  if (axis == "seq_len" || axis == "batch" || axis == "steps") return integer_value(check.positive_int(value, path));
  if (axis == "world_size") return integer_value(check.positive_int(value, path, kMaxWorldSize));
  if (axis == "lr") {
    if (!check.positive_number(value, path)) return std::nullopt;
    return AxisValue{value.text, value.text};
  }
  if (axis == "master_weights") {
    auto b = check.boolean(value, path);
    if (!b) return std::nullopt;
    return AxisValue{*b ? "true" : "false", *b ? "true" : "false"};
  }
  if (axis == "data") {
    auto setting = check_data(value, path, check);
    if (!setting) return std::nullopt;
    return AxisValue{value.text, *setting};
  }
  if (axis == "model") {
    auto name = check.string(value, path);
    if (!name) return std::nullopt;
    std::string error;
    if (!models.get(*name, error)) {
      check.error(value.pos, path, error);
      return std::nullopt;
    }
    return AxisValue{*name, *name};
  }
  if (axis == "phi") return same(check.one_of(value, path, {"mlp", "mean"}));
  if (axis == "attention") return same(check.one_of(value, path, {"nsa", "dense"}));
  if (axis == "device") return same(check.one_of(value, path, {"cpu", "cuda", "auto"}));
  if (axis == "fault") return same(check_fault(value, path, check, /*allow_none=*/true));
  if (axis == "probes") return same(check_probes_value(value, path, check));
  // Flags: the key position is not at hand here; the axis name was checked already.
  return same(check_flag(axis, value.pos, value, path, check));
}

void apply_axis(CellDraft& cell, const std::string& axis, const std::string& setting, const Origin& origin,
                ModelLibrary& models) {
  CellSpec& s = cell.spec;
  if (axis == "prefill") {
    s.flags["NSA_PREFILL_BATCHED"] = setting == "batched" ? "1" : "0";
    cell.origins["flags.NSA_PREFILL_BATCHED"] = origin;
  } else if (axis == "precision") {
    s.train.precision = setting;
    cell.origins["train.precision"] = origin;
  } else if (axis == "seq_len") {
    s.train.seq_len = std::stoi(setting);
    cell.origins["train.seq_len"] = origin;
  } else if (axis == "batch") {
    s.train.batch = std::stoi(setting);
  } else if (axis == "steps") {
    s.train.steps = std::stoi(setting);
  } else if (axis == "world_size") {
    s.train.world_size = std::stoi(setting);
  } else if (axis == "lr") {
    s.train.lr = *parse_number(setting);
  } else if (axis == "master_weights") {
    s.train.master_weights = setting == "true";
    cell.origins["train.master_weights"] = origin;
  } else if (axis == "data") {
    s.train.data = setting;
  } else if (axis == "model") {
    std::string error;
    s.model = *models.get(setting, error);
    s.model_name = setting;
    cell.origins["model"] = origin;
  } else if (axis == "phi") {
    s.model.nsa.phi = setting;
  } else if (axis == "attention") {
    s.model.attention = setting;
    cell.origins["model.attention"] = origin;
  } else if (axis == "device") {
    s.device = setting;
    cell.origins["device"] = origin;
  } else if (axis == "fault") {
    if (setting != "none" && std::find(s.faults.begin(), s.faults.end(), setting) == s.faults.end())
      s.faults.push_back(setting);
  } else if (axis == "probes") {
    // "all" keeps the file's probe settings; "none" is the same cell unobserved
    // (the yardstick for what observation costs); "cupti+finite" keeps only
    // those probes (as the file set them), to tell what each one costs.
    if (setting == "all") return;
    if (setting == "alternate") {  // the file's probes, on even steps only
      s.observe_alternate = true;
      return;
    }
    const auto only = split(setting, '+');
    for (auto& [name, probe] : s.probes)
      if (std::find(only.begin(), only.end(), name) == only.end()) probe.enabled = false;
  } else {
    s.flags[axis] = setting;
    cell.origins["flags." + axis] = origin;
  }
}

}  // namespace harness
