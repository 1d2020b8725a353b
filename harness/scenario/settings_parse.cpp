#include "harness/scenario/settings_parse.h"

#include <algorithm>
#include <map>

#include "harness/core/outcome.h"
#include "harness/scenario/axes.h"
#include "harness/scenario/limits.h"
#include "harness/scenario/model_section.h"

namespace harness {
namespace {

// [a-z0-9_]+ — a plain loop: std::regex recurses per character and overflows the
// stack on a long enough value.
bool is_code(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Options a probe reads besides `every`; anything else is a typo that would
// silently leave the probe at its default.
const std::map<std::string, std::vector<std::string>>& probe_options() {
  static const std::map<std::string, std::vector<std::string>> options = {{"cupti", {"trace_budget_mb"}}};
  return options;
}

void parse_train(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_map(n, "train")) return;
  check.check_keys(n, "train", {"steps", "batch", "seq_len", "lr", "warmup_steps", "weight_decay", "grad_clip",
                                "precision", "master_weights", "data", "seed", "world_size", "deterministic"});
  TrainSpec& t = base.spec.train;
  for (auto& e : n.entries) {
    const std::string path = "train." + e.key;
    const YNode& v = e.value;
    if (e.key == "steps") { if (auto x = check.positive_int(v, path)) t.steps = int(*x); }
    else if (e.key == "batch") { if (auto x = check.positive_int(v, path)) t.batch = int(*x); }
    else if (e.key == "seq_len") {
      if (auto x = check.positive_int(v, path)) t.seq_len = int(*x);
      base.origins[path] = Origin{v.pos, path};
    }
    else if (e.key == "lr") { if (auto x = check.positive_number(v, path)) t.lr = *x; }
    else if (e.key == "warmup_steps") { if (auto x = check.non_negative_int(v, path)) t.warmup_steps = int(*x); }
    else if (e.key == "weight_decay") { if (auto x = check.non_negative_number(v, path)) t.weight_decay = *x; }
    else if (e.key == "grad_clip") { if (auto x = check.non_negative_number(v, path)) t.grad_clip = *x; }
    else if (e.key == "precision") {
      if (auto x = check.one_of(v, path, {"fp32", "bf16", "fp16"})) t.precision = *x;
      base.origins[path] = Origin{v.pos, path};
    }
    else if (e.key == "master_weights") {
      if (auto x = check.boolean(v, path)) t.master_weights = *x;
      base.origins[path] = Origin{v.pos, path};
    }
    else if (e.key == "data") { if (auto x = check_data(v, path, check)) t.data = *x; }
    else if (e.key == "world_size") { if (auto x = check.positive_int(v, path, kMaxWorldSize)) t.world_size = int(*x); }
    else if (e.key == "seed") { if (auto x = check.non_negative_int(v, path)) t.seed = static_cast<unsigned long long>(*x); }
    else if (e.key == "deterministic") {
      if (auto x = check.boolean(v, path)) t.deterministic = *x;
      base.origins[path] = Origin{v.pos, path};
    }
  }
}

void parse_flags(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_map(n, "flags", "a mapping of NSA_* flags to values")) return;
  for (auto& e : n.entries) {
    const std::string path = "flags." + e.key;
    if (auto v = check_flag(e.key, e.key_pos, e.value, path, check)) {
      base.spec.flags[e.key] = *v;
      base.origins[path] = Origin{e.value.pos, path};
    }
  }
}

void parse_faults(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_seq(n, "faults", "a list of fault names")) return;
  for (size_t i = 0; i < n.items.size(); ++i) {
    auto name = check_fault(n.items[i], index_path("faults", i), check, /*allow_none=*/false);
    auto& faults = base.spec.faults;
    if (name && std::find(faults.begin(), faults.end(), *name) == faults.end()) faults.push_back(*name);
  }
}

void parse_probes(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_map(n, "probes", "a mapping of probe names")) return;
  check.check_keys(n, "probes", probe_names());
  for (auto& e : n.entries) {
    auto it = base.spec.probes.find(e.key);
    if (it == base.spec.probes.end()) continue;
    const std::string path = "probes." + e.key;
    ProbeSpec& p = it->second;
    if (e.value.is_scalar() && !e.value.quoted && parse_bool(e.value.text)) {
      p = default_probe(e.key);
      p.enabled = *parse_bool(e.value.text);
      if (!p.enabled) p.every = 0;
      continue;
    }
    if (!e.value.is_map()) {
      check.error(e.value.pos, path, "expected false, true or a mapping {every: N, ...}, got " + e.value.describe());
      continue;
    }
    p = default_probe(e.key);
    // `enabled: false` is a probe switched off that keeps its sampling and
    // options: what a cell the `probes` axis switched off ran with, written
    // out by a repro so that it reads back as that cell.
    std::vector<std::string> known = {"enabled", "every"};
    if (auto it = probe_options().find(e.key); it != probe_options().end())
      known.insert(known.end(), it->second.begin(), it->second.end());
    check.check_keys(e.value, path, known);
    for (auto& opt : e.value.entries) {
      const std::string opath = join_path(path, opt.key);
      if (opt.key == "enabled") {
        if (auto x = check.boolean(opt.value, opath)) p.enabled = *x;
      } else if (opt.key == "every") {
        if (auto x = check.positive_int(opt.value, opath)) p.every = int(*x);
      } else if (std::find(known.begin(), known.end(), opt.key) != known.end()) {
        // Every probe option so far is a positive number (a budget, a size).
        if (auto x = check.positive_number(opt.value, opath)) p.options[opt.key] = *x;
      }
    }
  }
}

void parse_watchdog(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_map(n, "watchdog")) return;
  check.check_keys(n, "watchdog", {"first_step_timeout_s", "stall_timeout_s", "step_timeout_s", "slow_step_factor"});
  WatchdogSpec& w = base.spec.watchdog;
  for (auto& e : n.entries) {
    auto x = check.positive_number(e.value, "watchdog." + e.key);
    if (!x) continue;
    if (e.key == "first_step_timeout_s") w.first_step_timeout_s = *x;
    if (e.key == "stall_timeout_s") w.stall_timeout_s = *x;
    if (e.key == "step_timeout_s") w.step_timeout_s = *x;
    if (e.key == "slow_step_factor") w.slow_step_factor = *x;
  }
}

void parse_gates(const YNode& n, Checker& check, CellDraft& base) {
  if (!check.expect_map(n, "gates")) return;
  check.check_keys(n, "gates", {"min_tok_s", "max_step_ms", "require_finite", "require_loss_falls",
                                "min_branch_share", "max_branch_share"});
  GateSpec& g = base.spec.gates;
  for (auto& e : n.entries) {
    const std::string path = "gates." + e.key;
    if (e.key == "min_tok_s") { if (auto x = check.positive_number(e.value, path)) g.min_tok_s = *x; }
    if (e.key == "max_step_ms") { if (auto x = check.positive_number(e.value, path)) g.max_step_ms = *x; }
    if (e.key == "require_finite") { if (auto x = check.boolean(e.value, path)) g.require_finite = *x; }
    if (e.key == "require_loss_falls") { if (auto x = check.boolean(e.value, path)) g.require_loss_falls = *x; }
    if (e.key == "min_branch_share") { if (auto x = check.fraction(e.value, path)) g.min_branch_share = *x; }
    if (e.key == "max_branch_share") { if (auto x = check.fraction(e.value, path)) g.max_branch_share = *x; }
  }
  if (g.min_branch_share && g.max_branch_share && *g.min_branch_share > *g.max_branch_share)
    check.error(n.find_entry("min_branch_share")->key_pos, "gates.min_branch_share",
                "is above gates.max_branch_share: no cell could pass");
}

// The `probes: alternate` axis value as a setting of its own, so that a repro
// of such a cell (which has no matrix) still watches even steps only.
void parse_observe_alternate(const YNode& n, Checker& check, CellDraft& base) {
  if (auto x = check.boolean(n, "observe_alternate")) base.spec.observe_alternate = *x;
}

// The sections read by a parser of one shape: the accepted keys and the
// dispatch in parse_settings both come from this table.
struct Section {
  const char* key;
  void (*parse)(const YNode&, Checker&, CellDraft&);
};
constexpr Section kSections[] = {{"train", parse_train},   {"flags", parse_flags},       {"faults", parse_faults},
                                 {"probes", parse_probes}, {"watchdog", parse_watchdog}, {"gates", parse_gates},
                                 {"observe_alternate", parse_observe_alternate}};

}  // namespace

const std::vector<std::string>& top_level_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"name", "description", "extends", "device", "model"};
    for (const auto& s : kSections) k.emplace_back(s.key);
    k.insert(k.end(), {"matrix", "expect"});
    return k;
  }();
  return keys;
}

std::optional<nlohmann::json> parse_expect(const YNode& node, const std::string& path, Checker& check) {
  if (!check.expect_map(node, path, "a mapping {outcome, reason?, step?, location?}")) return std::nullopt;
  check.check_keys(node, path, {"outcome", "reason", "step", "location"});
  nlohmann::json out = nlohmann::json::object();
  const size_t errors_before = check.error_count();
  if (!node.find("outcome"))
    check.error(node.pos, join_path(path, "outcome"), "missing: an expectation names the outcome");
  for (auto& e : node.entries) {
    const std::string p = join_path(path, e.key);
    if (e.key == "outcome") {
      if (auto o = check.one_of(e.value, p, {"pass", "hang", "step_timeout", "slow_step", "crash", "error", "fail",
                                             "skip"}))
        out["outcome"] = *o;
    } else if (e.key == "reason") {
      if (e.value.is_scalar() && is_code(e.value.text)) out["reason"] = e.value.text;
      else check.error(e.value.pos, p, "expected a reason code (lower_case_with_underscores), got " + e.value.describe());
    } else if (e.key == "step") {
      if (auto s = check.non_negative_int(e.value, p)) out["step"] = *s;
    } else if (e.key == "location") {
      if (auto s = check.string(e.value, p)) out["location"] = *s;
    }
  }
  if (check.error_count() != errors_before) return std::nullopt;
  return out;
}

void parse_settings(const YNode& root, Checker& check, ModelLibrary& models, CellDraft& base,
                    ScenarioHeader& header) {
  check.check_keys(root, "", top_level_keys());
  if (const YEntry* e = root.find_entry("name")) {
    if (auto s = check.string(e->value, "name")) {
      if (is_code(*s) && s->size() <= kMaxNameChars) header.name = *s;
      else if (is_code(*s))
        check.error(e->value.pos, "name", "a name of " + std::to_string(s->size()) + " characters, more than the limit of " +
                                              std::to_string(kMaxNameChars) + " (it names directories and reports)");
      else check.error(e->value.pos, "name", "expected lower-case letters, digits and '_' only, got " + e->value.describe());
    }
  } else {
    check.error(root.pos, "name", "missing: every scenario needs a name ([a-z0-9_]+)");
  }
  for (auto& e : root.entries) {
    if (e.key == "description") {
      if (auto s = check.string(e.value, "description")) header.description = *s;
    } else if (e.key == "device") {
      if (auto s = check.one_of(e.value, "device", {"cpu", "cuda", "auto"})) base.spec.device = *s;
      base.origins["device"] = Origin{e.value.pos, "device"};
    } else if (e.key == "model") {
      parse_model(e, check, models, base);
    } else if (e.key == "expect") {
      base.spec.expect = parse_expect(e.value, "expect", check);
    } else {
      for (const auto& s : kSections)
        if (e.key == s.key) s.parse(e.value, check, base);
    }
  }
  base.spec.scenario_name = header.name;
}

}  // namespace harness
