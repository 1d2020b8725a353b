#pragma once
// Model configuration: plain values, loaded from YAML, validated with messages a
// person can act on. No libtorch here, so the scenario parser can use it.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace YAML { class Node; }

namespace nsa {

// NSA hyper-parameters (arXiv 2502.11089 §3; DESIGN.md §2).
struct NsaParams {
  int cmp_block = 32;    // l: tokens per compressed block
  int cmp_stride = 16;   // d: stride between compressed blocks
  int sel_block = 64;    // l': tokens per selection block
  int sel_count = 16;    // n: selected blocks, counting 1 initial + 2 local forced
  int window = 512;      // w: sliding-window width
  std::string phi = "mlp";  // compression φ: "mlp" (with intra-block position embedding) or "mean"
};

struct ModelConfig {
  std::string name = "custom";
  int vocab = 256;        // byte vocabulary
  int d_model = 64;
  int n_layers = 2;
  int n_heads = 4;        // H query heads
  int n_kv_groups = 2;    // G KV groups (H / G heads share one group's K/V and block choice)
  int d_k = 16;
  int d_v = 16;
  int ffn_hidden = 0;     // SwiGLU hidden size; 0 → 8/3·D rounded up to 16
  int gate_hidden = 0;    // gate MLP hidden size D_g; 0 → max(16, D/4)
  double rope_base = 10000.0;
  double norm_eps = 1e-5;
  int max_seq_len = 256;  // the longest sequence the config is meant for (validation of train.seq_len)
  // "nsa": the sparse layer under test; "dense": causal SDPA with the same head
  // shapes (nsa/dense_attention.h), the yardstick NSA's speed is measured against.
  std::string attention = "nsa";
  NsaParams nsa;

  int heads_per_group() const { return n_heads / n_kv_groups; }
  int ffn_hidden_resolved() const;
  int gate_hidden_resolved() const;
  long long parameter_count() const;
};

// Every field of a config with its key, in one place: the YAML reader and
// writer here and the JSON (de)serializer of a cell spec walk these lists, so a
// new field is one line in each. `C` is the struct or its const; `visit(key,
// field)` is called for each field in the order the files are written. The two
// lists have one shape (a duplicate finder pairs them): one list per struct.
template <class C, class Visit>
void visit_nsa_params(C& p, Visit&& visit) {
  visit("cmp_block", p.cmp_block);
  visit("cmp_stride", p.cmp_stride);
  visit("sel_block", p.sel_block);
  visit("sel_count", p.sel_count);
  visit("window", p.window);
  visit("phi", p.phi);
}
// The top-level fields; `nsa` (visit_nsa_params) is their sub-mapping.
template <class C, class Visit>
void visit_model_fields(C& c, Visit&& visit) {
  visit("name", c.name);
  visit("vocab", c.vocab);
  visit("d_model", c.d_model);
  visit("n_layers", c.n_layers);
  visit("n_heads", c.n_heads);
  visit("n_kv_groups", c.n_kv_groups);
  visit("d_k", c.d_k);
  visit("d_v", c.d_v);
  visit("ffn_hidden", c.ffn_hidden);
  visit("gate_hidden", c.gate_hidden);
  visit("rope_base", c.rope_base);
  visit("norm_eps", c.norm_eps);
  visit("max_seq_len", c.max_seq_len);
  visit("attention", c.attention);
}

// One problem found in a config: `key` is the dotted path inside the config
// ("nsa.cmp_stride"), line/col are 1-based positions in the YAML source when known.
struct ConfigIssue {
  std::string key;
  std::string message;
  int line = 0;
  int col = 0;
};

// Semantic checks (heads divisible by groups, l % d, l' % d, sizes > 0, n ≥ 3, …).
std::vector<ConfigIssue> validate(const ModelConfig& c);

// Reads a config from a YAML mapping; unknown keys and wrong types become issues
// (with positions), never silent defaults. Fields absent keep `base`'s values.
ModelConfig model_config_from_yaml(const YAML::Node& node, std::vector<ConfigIssue>& issues,
                                   const ModelConfig& base = ModelConfig{});

// The named configs shipped under scenarios/configs/ (tiny, smoke, m7c_125m,
// paper_kernel). `configs_dir` empty → the compiled-in default directory.
std::vector<std::string> builtin_config_names(const std::string& configs_dir = "");
// Throws ConfigError (file:line:col: key: message) on a missing or invalid file.
ModelConfig load_model_config(const std::string& name, const std::string& configs_dir = "");
std::string default_configs_dir();

// Turns a config back into YAML text (for repro scenarios and artifacts).
std::string to_yaml(const ModelConfig& c);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace nsa
