#include "harness/scenario/cell_build.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "nsa/config.h"
#include "nsa/flags.h"

namespace harness {
namespace {

struct CellProblem {
  Origin origin;
  std::string message;
};

// The origin of a setting, or of the next best thing when it kept its default.
Origin origin_or(const CellDraft& d, const std::string& key, const std::string& fallback_key) {
  if (auto it = d.origins.find(key); it != d.origins.end()) return it->second;
  if (auto it = d.origins.find(fallback_key); it != d.origins.end()) return it->second;
  return Origin{Pos{}, key};
}

std::vector<CellProblem> impossible_combinations(const CellDraft& d, bool device_overridden) {
  std::vector<CellProblem> out;
  const CellSpec& s = d.spec;
  if (s.train.seq_len > s.model.max_seq_len)
    out.push_back({origin_or(d, "train.seq_len", "model"),
                   "seq_len " + std::to_string(s.train.seq_len) + " is above the model's max_seq_len " +
                       std::to_string(s.model.max_seq_len) + " (model '" + s.model_name + "')"});
  if (s.device == "cpu") {
    for (auto& [name, value] : s.flags) {
      const nsa::FlagInfo* f = nsa::find_flag(name);
      if (!f || !f->cuda_only || !(value == "1" || value == "true")) continue;
      out.push_back({origin_or(d, "flags." + name, "device"),
                     name + " is CUDA-only and set to " + value + ", but the device is cpu" +
                         (device_overridden ? " (from --device)" : "") +
                         ": set it to 0 or run on cuda or auto"});
    }
  }
  // A model field set by an axis can make a config no file would pass (n_heads 4
  // with n_kv_groups 3): the config's own checks, at the line of the field's
  // axis value, or of the cell's first model-field axis when another field is named.
  const auto model_axis = std::find_if(s.axes.begin(), s.axes.end(),
                                       [](const auto& kv) { return kv.first.rfind("model.", 0) == 0; });
  if (model_axis != s.axes.end())
    for (const auto& issue : nsa::validate(s.model))
      out.push_back({origin_or(d, "model." + issue.key, model_axis->first), "model." + issue.key + ": " + issue.message});
  if (!s.train.master_weights && s.train.precision == "fp32")
    out.push_back({origin_or(d, "train.master_weights", "train.precision"),
                   "master_weights: false with precision fp32 is meaningless: fp32 parameters are their own "
                   "master weights"});
  return out;
}

std::string cells_suffix(const std::vector<std::string>& ids) {
  std::string out = ids.size() == 1 ? " (cell '" : " (cells '";
  for (size_t i = 0; i < ids.size() && i < 3; ++i) out += (i ? "', '" : "") + ids[i];
  out += "'";
  if (ids.size() > 3) out += " and " + std::to_string(ids.size() - 3) + " more";
  return out + ")";
}

}  // namespace

std::vector<CellSpec> build_cells(const CellDraft& base, const ParsedMatrix& pm, const std::vector<MatrixCell>& cells,
                                  const BuildOptions& opts, Checker& check, ModelLibrary& models) {
  std::vector<CellSpec> specs;
  // One problem often shows in many cells (seq_len=512 × every precision):
  // report it once at its line, naming the cells.
  using Key = std::tuple<int, int, int, std::string, std::string>;
  std::map<Key, std::vector<std::string>> problems;
  std::vector<Key> problem_order;

  for (const MatrixCell& mc : cells) {
    CellDraft d = base;
    d.spec.id = mc.id;
    d.spec.axes = mc.values;
    d.spec.scenario_file = opts.scenario_file;
    // The model replaces the whole config, so it goes before axes that edit it (phi).
    for (int pass = 0; pass < 2; ++pass)
      for (auto& [axis, text] : mc.values) {
        if (applies_first(axis) != (pass == 0)) continue;
        const ParsedValue& v = pm.lookup(mc, axis, text);
        apply_axis(d, axis, v.value.setting, v.origin, models);
      }
    for (size_t inc : mc.includes)
      if (pm.includes[inc].expect) d.spec.expect = pm.includes[inc].expect;
    if (opts.device_override) d.spec.device = *opts.device_override;

    for (auto& p : impossible_combinations(d, opts.device_override.has_value())) {
      Key key{p.origin.pos.file, p.origin.pos.line, p.origin.pos.col, p.origin.path, p.message};
      if (!problems.count(key)) problem_order.push_back(key);
      problems[key].push_back(mc.id);
    }
    specs.push_back(std::move(d.spec));
  }

  for (auto& key : problem_order) {
    auto& [file, line, col, path, message] = key;
    std::string suffix = pm.present ? cells_suffix(problems[key]) : "";
    check.error(Pos{file, line, col}, path, message + suffix);
  }
  return specs;
}

}  // namespace harness
