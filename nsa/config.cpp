#include "nsa/config.h"

#include "nsa/edit_distance.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <type_traits>

#ifndef NSA_DEFAULT_CONFIGS_DIR
#define NSA_DEFAULT_CONFIGS_DIR "scenarios/configs"
#endif

namespace nsa {
namespace {

ConfigIssue issue_at(const YAML::Node& n, std::string key, std::string msg) {
  ConfigIssue i{std::move(key), std::move(msg), 0, 0};
  if (n.IsDefined()) {
    i.line = n.Mark().line + 1;
    i.col = n.Mark().column + 1;
  }
  return i;
}

bool read_int(const YAML::Node& n, const std::string& key, int& out, std::vector<ConfigIssue>& issues) {
  if (!n.IsScalar()) {
    issues.push_back(issue_at(n, key, "expected an integer"));
    return false;
  }
  try {
    out = n.as<int>();
    return true;
  } catch (const YAML::Exception&) {
    issues.push_back(issue_at(n, key, "expected an integer, got '" + n.Scalar() + "'"));
    return false;
  }
}

bool read_double(const YAML::Node& n, const std::string& key, double& out, std::vector<ConfigIssue>& issues) {
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
    out = n.as<double>();
    return true;
  } catch (const YAML::Exception&) {
    issues.push_back(issue_at(n, key, "expected a number"));
    return false;
  }
}

std::string did_you_mean(const std::string& key, const std::vector<std::string>& known) {
  // Levenshtein distance ≤ 2, or a shared prefix of 4: enough for typos of our short keys.
  std::string best;
  size_t best_d = 3;
  for (auto& k : known) {
    size_t d = edit_distance(key, k);
    if (d < best_d) { best_d = d; best = k; }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace

int ModelConfig::ffn_hidden_resolved() const {
  if (ffn_hidden > 0) return ffn_hidden;
  int h = (8 * d_model + 2) / 3;
  return (h + 15) / 16 * 16;
}

int ModelConfig::gate_hidden_resolved() const {
  return gate_hidden > 0 ? gate_hidden : std::max(16, d_model / 4);
}

long long ModelConfig::parameter_count() const {
  long long D = d_model, H = n_heads, G = n_kv_groups, dk = d_k, dv = d_v;
  long long F = ffn_hidden_resolved();
  long long mlp = 3 * D * F;
  if (attention == "dense") return 2LL * vocab * D + n_layers * (D * H * dk + D * G * (dk + dv) + H * dv * D + mlp + 2 * D) + D;
  long long l = nsa.cmp_block;
  long long attn = D * H * dk + 3 * (D * G * dk + D * G * dv) + H * dv * D;
  long long phi = nsa.phi == "mlp" ? (l * dk + dk) * dk + dk + (l * dv + dv) * dv + dv + l * dk + l * dv : 0;
  long long Dg = gate_hidden_resolved();
  long long gate = D * Dg + Dg + Dg * 3 * H + 3 * H;
  long long layer = attn + phi + gate + mlp + 2 * D;
  return 2LL * vocab * D + n_layers * layer + D;
}

std::vector<ConfigIssue> validate(const ModelConfig& c) {
  std::vector<ConfigIssue> out;
  auto positive = [&](const char* key, long long v) {
    if (v <= 0) out.push_back({key, "must be > 0, got " + std::to_string(v)});
  };
  positive("vocab", c.vocab);
  positive("d_model", c.d_model);
  positive("n_layers", c.n_layers);
  positive("n_heads", c.n_heads);
  positive("n_kv_groups", c.n_kv_groups);
  positive("d_k", c.d_k);
  positive("d_v", c.d_v);
  positive("max_seq_len", c.max_seq_len);
  positive("nsa.cmp_block", c.nsa.cmp_block);
  positive("nsa.cmp_stride", c.nsa.cmp_stride);
  positive("nsa.sel_block", c.nsa.sel_block);
  positive("nsa.sel_count", c.nsa.sel_count);
  positive("nsa.window", c.nsa.window);
  if (c.ffn_hidden < 0) out.push_back({"ffn_hidden", "must be ≥ 0 (0 picks 8/3·d_model)"});
  if (c.gate_hidden < 0) out.push_back({"gate_hidden", "must be ≥ 0 (0 picks max(16, d_model/4))"});
  if (c.n_heads > 0 && c.n_kv_groups > 0 && c.n_heads % c.n_kv_groups != 0)
    out.push_back({"n_heads", "n_heads (" + std::to_string(c.n_heads) + ") must be divisible by n_kv_groups (" +
                                  std::to_string(c.n_kv_groups) + ")"});
  if (c.d_k > 0 && c.d_k % 2 != 0) out.push_back({"d_k", "must be even (RoPE rotates pairs of dimensions)"});
  if (c.nsa.cmp_stride > 0 && c.nsa.cmp_block > 0 && c.nsa.cmp_block % c.nsa.cmp_stride != 0)
    out.push_back({"nsa.cmp_block", "compression block l (" + std::to_string(c.nsa.cmp_block) +
                                        ") must be a multiple of the stride d (" + std::to_string(c.nsa.cmp_stride) + ")"});
  if (c.nsa.cmp_stride > 0 && c.nsa.sel_block > 0 && c.nsa.sel_block % c.nsa.cmp_stride != 0)
    out.push_back({"nsa.sel_block", "selection block l' (" + std::to_string(c.nsa.sel_block) +
                                        ") must be a multiple of the stride d (" + std::to_string(c.nsa.cmp_stride) + ")"});
  if (c.nsa.sel_count > 0 && c.nsa.sel_count < 3)
    out.push_back({"nsa.sel_count", "must be ≥ 3: it counts the initial block and the two local blocks, which are always selected"});
  if (c.nsa.phi != "mlp" && c.nsa.phi != "mean")
    out.push_back({"nsa.phi", "must be 'mlp' or 'mean', got '" + c.nsa.phi + "'"});
  if (c.attention != "nsa" && c.attention != "dense")
    out.push_back({"attention", "must be 'nsa' or 'dense', got '" + c.attention + "'"});
  if (c.rope_base <= 1.0) out.push_back({"rope_base", "must be > 1"});
  if (!(c.norm_eps > 0)) out.push_back({"norm_eps", "must be > 0"});
  return out;
}

ModelConfig model_config_from_yaml(const YAML::Node& node, std::vector<ConfigIssue>& issues,
                                   const ModelConfig& base) {
  ModelConfig c = base;
  if (!node.IsMap()) {
    issues.push_back(issue_at(node, "", "a model config must be a mapping"));
    return c;
  }
  using Setter = std::function<void(const YAML::Node&, const std::string&)>;
  // One reader per field type; the keys come from the field lists (config.h).
  auto setters = [&](std::map<std::string, Setter>& out, const char* expected_string) {
    return [&out, &issues, expected_string](const char* key, auto& field) {
      using T = std::decay_t<decltype(field)>;
      auto* f = &field;
      out[key] = [f, &issues, expected_string](const YAML::Node& n, const std::string& k) {
        if constexpr (std::is_same_v<T, int>) {
          read_int(n, k, *f, issues);
        } else if constexpr (std::is_same_v<T, double>) {
          read_double(n, k, *f, issues);
        } else {
          if (n.IsScalar()) *f = n.Scalar(); else issues.push_back(issue_at(n, k, expected_string));
        }
      };
    };
  };
  std::map<std::string, Setter> top, nsa_keys;
  visit_model_fields(c, setters(top, "expected a string"));
  visit_nsa_params(c.nsa, setters(nsa_keys, "expected 'mlp' or 'mean'"));
  auto keys_of = [](const std::map<std::string, Setter>& m) {
    std::vector<std::string> v;
    for (auto& [k, _] : m) v.push_back(k);
    return v;
  };
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = it->first.Scalar();
    if (key == "nsa") {
      if (!it->second.IsMap()) {
        issues.push_back(issue_at(it->second, "nsa", "expected a mapping of NSA hyper-parameters"));
        continue;
      }
      for (auto jt = it->second.begin(); jt != it->second.end(); ++jt) {
        std::string sub = jt->first.Scalar();
        auto f = nsa_keys.find(sub);
        if (f == nsa_keys.end())
          issues.push_back(issue_at(jt->first, "nsa." + sub, "unknown key" + did_you_mean(sub, keys_of(nsa_keys))));
        else
          f->second(jt->second, "nsa." + sub);
      }
      continue;
    }
    auto f = top.find(key);
    if (f == top.end()) {
      auto known = keys_of(top);
      known.push_back("nsa");
      issues.push_back(issue_at(it->first, key, "unknown key" + did_you_mean(key, known)));
    } else {
      f->second(it->second, key);
    }
  }
  // Semantic issues point at the mapping (line of the config) when no better position is known.
  for (auto& i : validate(c)) {
    i.line = node.Mark().line + 1;
    i.col = node.Mark().column + 1;
    issues.push_back(i);
  }
  return c;
}

std::string default_configs_dir() {
  if (const char* env = std::getenv("NSA_HARNESS_CONFIGS")) return env;
  return NSA_DEFAULT_CONFIGS_DIR;
}

std::vector<std::string> builtin_config_names(const std::string& configs_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  fs::path dir = configs_dir.empty() ? default_configs_dir() : configs_dir;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_model_config(const std::string& name, const std::string& configs_dir) {
  namespace fs = std::filesystem;
  fs::path dir = configs_dir.empty() ? default_configs_dir() : configs_dir;
  fs::path file = dir / (name + ".yaml");
  if (!fs::exists(file)) {
    std::string known;
    for (auto& n : builtin_config_names(dir.string())) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown model config '" + name + "' (looked for " + file.string() + "; known: " + known + ")");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    throw ConfigError(file.string() + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": " + e.msg);
  }
  std::vector<ConfigIssue> issues;
  ModelConfig c = model_config_from_yaml(root, issues);
  if (!issues.empty()) {
    std::ostringstream os;
    for (auto& i : issues)
      os << file.string() << ":" << i.line << ":" << i.col << ": " << i.key << ": " << i.message << "\n";
    throw ConfigError(os.str());
  }
  if (c.name == "custom") c.name = name;
  return c;
}

std::string to_yaml(const ModelConfig& c) {
  YAML::Emitter e;
  auto emit = [&e](const char* key, const auto& field) { e << YAML::Key << key << YAML::Value << field; };
  e << YAML::BeginMap;
  visit_model_fields(c, emit);
  e << YAML::Key << "nsa" << YAML::Value << YAML::BeginMap;
  visit_nsa_params(c.nsa, emit);
  e << YAML::EndMap << YAML::EndMap;
  return e.c_str();
}

}  // namespace nsa
