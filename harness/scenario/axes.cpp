#include "harness/scenario/axes.h"

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include "harness/core/text.h"
#include "harness/scenario/limits.h"
#include "nsa/config.h"
#include "nsa/faults.h"
#include "nsa/flags.h"

namespace harness {
namespace {

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
      if (!item.empty() && !nsa::faults.find(item)) {
        check.error(value.pos, path, "unknown fault '" + item + "'" + did_you_mean(item, nsa::faults.names()));
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
  if (nsa::faults.find(value.text)) return value.text;
  std::string hint = did_you_mean(value.text, nsa::faults.names());
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

namespace {

// ---- The axis table: one row per axis. Adding an axis is adding a row. ----
// Check functions accept or refuse one written value; apply functions set what
// the accepted value maps onto (the origin is recorded from the row's
// `origin_key`, so cross-setting problems point at the axis value's line).

std::optional<AxisValue> one_of(const YNode& v, const std::string& path, AxisCheck& c,
                                const std::vector<std::string>& choices) {
  return same(c.check.one_of(v, path, choices));
}
std::optional<AxisValue> positive_int(const std::string&, const YNode& v, const std::string& path, AxisCheck& c) {
  return integer_value(c.check.positive_int(v, path));
}
// `true` / `false`, written and set as those words.
std::optional<AxisValue> boolean_value(const std::string&, const YNode& v, const std::string& path, AxisCheck& c) {
  auto b = c.check.boolean(v, path);
  if (!b) return std::nullopt;
  return AxisValue{*b ? "true" : "false", *b ? "true" : "false"};
}

const std::vector<AxisDef> kAxes = {
    {"prefill", AxisTarget::flags, "`sequential`, `batched`", "`NSA_PREFILL_BATCHED` = 0 / 1",
     "flags.NSA_PREFILL_BATCHED",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return one_of(v, p, c, {"sequential", "batched"});
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) {
       s.flags["NSA_PREFILL_BATCHED"] = v == "batched" ? "1" : "0";
     }},
    {"precision", AxisTarget::train, "`fp32`, `bf16`, `fp16`", "`train.precision`", "train.precision",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return one_of(v, p, c, {"fp32", "bf16", "fp16"});
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.precision = v; }},
    {"seq_len", AxisTarget::train, "positive integers", "`train.seq_len`", "train.seq_len", positive_int,
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.seq_len = std::stoi(v); }},
    {"batch", AxisTarget::train, "positive integers", "`train.batch`", "", positive_int,
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.batch = std::stoi(v); }},
    {"steps", AxisTarget::train, "positive integers", "`train.steps`", "", positive_int,
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.steps = std::stoi(v); }},
    {"world_size", AxisTarget::train, "1 to 64", "`train.world_size`: data-parallel ranks, one child process each",
     "train.world_size",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return integer_value(c.check.positive_int(v, p, kMaxWorldSize));
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.world_size = std::stoi(v); }},
    {"seed", AxisTarget::train, "non-negative integers", "`train.seed`: the training seed (data order, init)", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return integer_value(c.check.non_negative_int(v, p));
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.seed = std::stoull(v); }},
    {"repeat", AxisTarget::cell, "one positive integer N (not a list)",
     "nothing: every cell runs N times, as `repeat=1` … `repeat=N` (the run-to-run noise, seen side by side; the "
     "Observation Cost and Against Dense tables take its spread as their runs' noise)", "",
     positive_int, [](CellSpec&, const std::string&, const std::string&, ModelLibrary&) {}, /*count=*/true},
    {"lr", AxisTarget::train, "number", "`train.lr`", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) -> std::optional<AxisValue> {
       if (!c.check.positive_number(v, p)) return std::nullopt;
       return AxisValue{v.text, v.text};
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.lr = *parse_number(v); }},
    {"master_weights", AxisTarget::train, "`true`, `false`", "`train.master_weights`", "train.master_weights",
     boolean_value,
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) {
       s.train.master_weights = v == "true";
     }},
    {"deterministic", AxisTarget::train, "`true`, `false`", "`train.deterministic`", "train.deterministic",
     boolean_value,
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) {
       s.train.deterministic = v == "true";
     }},
    {"data", AxisTarget::train, "as `train.data`", "`train.data`", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) -> std::optional<AxisValue> {
       auto setting = check_data(v, p, c.check);
       if (!setting) return std::nullopt;
       return AxisValue{v.text, *setting};
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.train.data = v; }},
    {"model", AxisTarget::model_config, "config name", "`model`", "model",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) -> std::optional<AxisValue> {
       auto name = c.check.string(v, p);
       if (!name) return std::nullopt;
       std::string error;
       if (!c.models.get(*name, error)) {
         c.check.error(v.pos, p, error);
         return std::nullopt;
       }
       return AxisValue{*name, *name};
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary& models) {
       std::string error;
       s.model = *models.get(v, error);  // checked when the value was accepted
       s.model_name = v;
     }},
    {"phi", AxisTarget::model, "`mlp`, `mean`", "`model.nsa.phi`", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return one_of(v, p, c, {"mlp", "mean"});
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.model.nsa.phi = v; }},
    {"attention", AxisTarget::model, "`nsa`, `dense`",
     "`model.attention`: `dense` is causal SDPA with the same head shapes and no NSA branches, the yardstick for "
     "NSA's speed (the probes that read the sparse layer — parity, invariants, routing, gates — do not run on it)",
     "model.attention",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return one_of(v, p, c, {"nsa", "dense"});
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.model.attention = v; }},
    {"device", AxisTarget::cell, "`cpu`, `cuda`, `auto`", "`device`", "device",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return one_of(v, p, c, {"cpu", "cuda", "auto"});
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) { s.device = v; }},
    {"fault", AxisTarget::cell, "a fault name or `none`", "adds the fault to `faults`", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return same(check_fault(v, p, c.check, /*allow_none=*/true));
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) {
       if (v != "none" && std::find(s.faults.begin(), s.faults.end(), v) == s.faults.end()) s.faults.push_back(v);
     }},
    {"probes", AxisTarget::cell, "`all`, `none`, `alternate`, or probe names joined by `+`",
     "which of the file's probes run (`none`: the cell unobserved, the yardstick of what observing costs)", "",
     [](const std::string&, const YNode& v, const std::string& p, AxisCheck& c) {
       return same(check_probes_value(v, p, c.check));
     },
     [](CellSpec& s, const std::string&, const std::string& v, ModelLibrary&) {
       // "all" keeps the file's probe settings; "none" is the same cell unobserved
       // (the yardstick for what observation costs); "cupti+finite" keeps only
       // those probes (as the file set them), to tell what each one costs.
       if (v == "all") return;
       if (v == "alternate") {  // the file's probes, on even steps only
         s.observe_alternate = true;
         return;
       }
       const auto only = split(v, '+');
       for (auto& [name, probe] : s.probes)
         if (std::find(only.begin(), only.end(), name) == only.end()) probe.enabled = false;
     }},
};

// The row every registered NSA_* flag shares: the axis name is the flag's.
const AxisDef kFlagAxis = {
    "NSA_*", AxisTarget::flags, "the flag's values", "`flags.NAME`", "flags.",
    [](const std::string& axis, const YNode& v, const std::string& p, AxisCheck& c) {
      // The key position is not at hand here; the axis name was checked already.
      return same(check_flag(axis, v.pos, v, p, c.check));
    },
    [](CellSpec& s, const std::string& axis, const std::string& v, ModelLibrary&) { s.flags[axis] = v; }};

// The model's fields as axes, named by their path in a scenario's `model:`
// mapping: every key visit_model_fields / visit_nsa_params expose, except
// `name` (it names a config, it sets nothing) and the fields that have a row
// of their own above (`attention`, `phi`): one name per setting.
template <class Config, class F>
void for_each_model_axis(Config& c, F&& f) {
  nsa::visit_model_fields(c, [&](std::string_view key, auto& field) {
    if (key != "name" && key != "attention") f("model." + std::string(key), field);
  });
  nsa::visit_nsa_params(c.nsa, [&](std::string_view key, auto& field) {
    if (key != "phi") f("model.nsa." + std::string(key), field);
  });
}

// Each value is checked for its field's type here; whether the config it makes
// is a valid model (heads divisible by groups, …) is checked per cell, where
// the other axes' values are known (cell_build.cpp).
const AxisDef kModelFieldAxis = {
    "model.*", AxisTarget::model, "the field's values", "`model.KEY` of the cell's config", "model.",
    [](const std::string& axis, const YNode& v, const std::string& p, AxisCheck& c) -> std::optional<AxisValue> {
      std::optional<AxisValue> out;
      nsa::ModelConfig probe;
      for_each_model_axis(probe, [&](const std::string& name, auto& field) {
        using T = std::decay_t<decltype(field)>;
        if (name != axis) return;
        if constexpr (std::is_same_v<T, int>) out = integer_value(c.check.non_negative_int(v, p));
        else if constexpr (std::is_same_v<T, double>) {
          if (c.check.positive_number(v, p)) out = AxisValue{v.text, v.text};
        } else out = same(c.check.string(v, p));
      });
      return out;
    },
    [](CellSpec& s, const std::string& axis, const std::string& v, ModelLibrary&) {
      for_each_model_axis(s.model, [&](const std::string& name, auto& field) {
        using T = std::decay_t<decltype(field)>;
        if (name != axis) return;
        if constexpr (std::is_same_v<T, int>) field = std::stoi(v);
        else if constexpr (std::is_same_v<T, double>) field = *parse_number(v);
        else field = v;
      });
    }};

bool is_model_field_axis(const std::string& name) {
  bool found = false;
  nsa::ModelConfig probe;
  for_each_model_axis(probe, [&](const std::string& axis, auto&) { found = found || axis == name; });
  return found;
}

}  // namespace

const std::vector<AxisDef>& axis_table() { return kAxes; }

const AxisDef* find_axis(const std::string& name) {
  for (const AxisDef& a : kAxes)
    if (a.name == name) return &a;
  if (nsa::find_flag(name)) return &kFlagAxis;
  if (is_model_field_axis(name)) return &kModelFieldAxis;
  return nullptr;
}

std::vector<std::string> known_axis_names() {
  std::vector<std::string> names;
  for (const AxisDef& a : kAxes) names.emplace_back(a.name);
  nsa::ModelConfig probe;
  for_each_model_axis(probe, [&](const std::string& axis, auto&) { names.push_back(axis); });
  for (auto& f : nsa::flag_registry()) names.emplace_back(f.name);
  return names;
}

bool is_axis_name(const std::string& name) { return find_axis(name) != nullptr; }

std::optional<AxisValue> check_axis_value(const std::string& axis, const YNode& value, const std::string& path,
                                          Checker& check, ModelLibrary& models) {
  AxisCheck c{check, models};
  return find_axis(axis)->check(axis, value, path, c);
}

void apply_axis(CellDraft& cell, const std::string& axis, const std::string& setting, const Origin& origin,
                ModelLibrary& models) {
  const AxisDef& a = *find_axis(axis);
  a.apply(cell.spec, axis, setting, models);
  if (a.origin_key.empty()) return;
  std::string key(a.origin_key);
  if (&a == &kFlagAxis) key += axis;                        // "flags.<NAME>"
  if (&a == &kModelFieldAxis) key = axis;                   // "model.<KEY>"
  cell.origins[key] = origin;
}

bool applies_first(const std::string& axis) {
  const AxisDef* a = find_axis(axis);
  return a && a->target == AxisTarget::model_config;
}

}  // namespace harness
