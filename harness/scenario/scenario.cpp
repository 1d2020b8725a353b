#include "harness/scenario/scenario.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/scenario/cell_build.h"
#include "harness/scenario/limits.h"
#include "harness/scenario/matrix_parse.h"
#include "harness/scenario/settings_parse.h"
#include "harness/scenario/source_read.h"
#include "harness/scenario/text_check.h"
#include "nsa/config.h"

namespace harness {
namespace {
namespace fs = std::filesystem;

struct Loader {
  SourceSet sources;
  std::vector<Diagnostic> diags;
  std::vector<std::string> chain;  // canonical paths of the files being loaded, outermost first

  // Parses `text` as `path` and merges it over its `extends` chain.
  std::optional<YNode> load(const std::string& text, const std::string& path) {
    // The lines shown under diagnostics must be printable text themselves.
    int file = sources.add(path, replace_bad_bytes(text));
    if (!refuse_bad_bytes(text, file)) return std::nullopt;
    auto tree = parse_yaml(text, file, sources, diags);
    if (!tree) return std::nullopt;
    Checker check(sources, diags);
    if (!check.expect_map(*tree, "", "a mapping of scenario keys at the top level")) return std::nullopt;
    const YEntry* ext = tree->find_entry("extends");
    if (!ext) return tree;

    YNode own = *tree;
    own.entries.erase(std::remove_if(own.entries.begin(), own.entries.end(),
                                     [](const YEntry& e) { return e.key == "extends"; }),
                      own.entries.end());
    auto base_name = check.string(ext->value, "extends");
    if (!base_name) return own;
    if (base_name->size() > kMaxExtendsPathChars) {
      check.error(ext->value.pos, "extends", "a path of " + std::to_string(base_name->size()) +
                                                 " characters, more than the limit of " +
                                                 std::to_string(kMaxExtendsPathChars));
      return own;
    }
    if (chain.size() >= kMaxExtendsDepth) {
      check.error(ext->value.pos, "extends", "more than " + std::to_string(kMaxExtendsDepth) +
                                                 " files in one extends chain");
      return own;
    }
    fs::path base_path = (fs::path(path).parent_path() / *base_name).lexically_normal();
    std::string canonical = canonical_or_as_is(base_path);
    if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
      std::string cycle;
      auto start = std::find(chain.begin(), chain.end(), canonical);
      for (auto it = start; it != chain.end(); ++it) cycle += fs::path(*it).filename().string() + " → ";
      cycle += fs::path(canonical).filename().string();
      check.error(ext->value.pos, "extends", "cycle: " + cycle);
      return own;
    }
    std::string why;
    auto base_text = read_scenario_bytes(base_path.string(), why);
    if (!base_text) {
      check.error(ext->value.pos, "extends", "cannot read base scenario " + base_path.string() + ": " + why);
      return own;
    }
    chain.push_back(canonical);
    auto base = load(*base_text, base_path.string());
    chain.pop_back();
    if (!base) return own;
    return merge_nodes(*base, own);
  }

  // A NUL or a byte that is not UTF-8, at its line and column and, where the
  // rest of the file still reads as YAML, under the key it belongs to.
  bool refuse_bad_bytes(const std::string& text, int file) {
    auto bad = find_bad_byte(text);
    if (!bad) return true;
    Pos pos{file, bad->line, bad->col};
    std::vector<Diagnostic> ignored;
    std::string key;
    if (auto tree = parse_yaml(replace_bad_bytes(text), file, sources, ignored)) key = key_path_at(*tree, pos);
    diags.push_back(sources.diagnostic(pos, key, bad->message));
    return false;
  }

  static std::string canonical_or_as_is(const fs::path& p) {
    std::error_code ec;  // the throwing overload fails on ENAMETOOLONG and the like
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.lexically_normal().string() : c.string();
  }
};

// FNV-1a: stable across platforms and runs, unlike std::hash.
std::string stable_hash(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

// `prefill` is NSA_PREFILL_BATCHED by another name: two axes for it would
// fight over one flag, and a `flags:` value under the axis never takes effect.
void check_prefill_twice(const CellDraft& base, const ParsedMatrix& pm, Checker& check,
                         std::vector<std::string>& warnings) {
  const MatrixAxis* prefill = nullptr;
  const MatrixAxis* flag = nullptr;
  for (auto& a : pm.input.axes) {
    if (a.name == "prefill") prefill = &a;
    if (a.name == "NSA_PREFILL_BATCHED") flag = &a;
  }
  if (prefill && flag) {
    size_t i = static_cast<size_t>(flag - pm.input.axes.data());
    check.error(pm.axis_values[i].front().origin.pos, "matrix.NSA_PREFILL_BATCHED",
                "the prefill axis already sets this flag: keep one of the two axes");
  }
  if ((prefill || flag) && base.origins.count("flags.NSA_PREFILL_BATCHED"))
    warnings.push_back("flags.NSA_PREFILL_BATCHED is overridden in every cell by the matrix's " +
                       std::string(prefill ? "prefill" : "NSA_PREFILL_BATCHED") + " axis");
}

std::string read_file(const std::string& path) {
  std::string why;
  auto text = read_scenario_bytes(path, why);
  if (!text) {
    Diagnostic d;
    d.file = path;
    d.message = "cannot read the scenario file: " + why;
    throw ScenarioError({d});
  }
  return *text;
}

}  // namespace

Scenario load_scenario_text(const std::string& text, const std::string& path, const LoadOptions& options) {
  Loader loader;
  if (text.size() > kMaxScenarioBytes) {
    // Text from memory meets the same limit as a file, so both load the same way.
    Diagnostic d;
    d.file = path;
    d.message = "cannot read the scenario file: " + std::to_string(text.size()) + " bytes, more than the limit of " +
                std::to_string(kMaxScenarioBytes >> 20) + " MiB";
    throw ScenarioError({d});
  }
  loader.chain.push_back(Loader::canonical_or_as_is(fs::path(path)));
  auto root = loader.load(text, path);
  if (!root) throw ScenarioError(loader.diags);

  Checker check(loader.sources, loader.diags);
  ModelLibrary models(options.configs_dir.empty() ? nsa::default_configs_dir() : options.configs_dir);
  Scenario s;
  s.file = path;

  CellDraft base;
  base.spec.probes = default_probes();
  if (!root->find("model")) {
    std::string error;
    if (auto tiny = models.get("tiny", error)) {
      base.spec.model = *tiny;
      base.spec.model_name = "tiny";
    } else {
      check.error(root->pos, "model", "the default model: " + error);
    }
  }
  ScenarioHeader header;
  parse_settings(*root, check, models, base, header);
  s.name = header.name;
  s.description = header.description;

  ParsedMatrix pm = parse_matrix(root->find_entry("matrix"), check, models);
  check_prefill_twice(base, pm, check, s.warnings);
  // Cells built from a matrix with bad values would report the same problem again.
  if (!loader.diags.empty()) throw ScenarioError(loader.diags);
  std::vector<MatrixCell> cells = expand_checked(pm, check, s.warnings);
  if (!loader.diags.empty()) throw ScenarioError(loader.diags);

  BuildOptions build{options.device_override, path};
  s.cells = build_cells(base, pm, cells, build, check, models);
  if (!loader.diags.empty()) throw ScenarioError(loader.diags);

  for (auto& axis : pm.input.axes) s.axis_names.push_back(axis.name);
  for (auto& cell : cells)
    for (auto& [k, v] : cell.values)
      if (std::find(s.axis_names.begin(), s.axis_names.end(), k) == s.axis_names.end()) s.axis_names.push_back(k);

  s.resolved = to_json(*root);
  std::string hashed = s.resolved.dump();
  for (CellSpec c : s.cells) {
    c.scenario_file.clear();  // the same content hashes the same wherever the file lies
    hashed += nlohmann::json(c).dump();
  }
  s.hash = stable_hash(hashed);
  return s;
}

Scenario load_scenario(const std::string& path, const LoadOptions& options) {
  return load_scenario_text(read_file(path), path, options);
}

}  // namespace harness
