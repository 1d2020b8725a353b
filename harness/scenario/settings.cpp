#include "harness/scenario/settings.h"

#include "harness/scenario/diagnostic.h"

namespace harness {

std::optional<nsa::ModelConfig> ModelLibrary::get(const std::string& name, std::string& error) {
  if (auto it = loaded_.find(name); it != loaded_.end()) return it->second;
  auto known = names();
  bool exists = false;
  for (auto& k : known) exists = exists || k == name;
  if (!exists) {
    std::string hint = did_you_mean(name, known);
    std::string list;
    for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
    error = "unknown model config '" + name + "'" + (hint.empty() ? " (known: " + list + ")" : hint);
    return std::nullopt;
  }
  try {
    nsa::ModelConfig c = nsa::load_model_config(name, dir_);
    loaded_[name] = c;
    return c;
  } catch (const nsa::ConfigError& e) {
    // The config file itself is broken: its own diagnostics name file:line:col.
    error = "model config '" + name + "' is invalid: " + e.what();
    while (!error.empty() && error.back() == '\n') error.pop_back();
    return std::nullopt;
  }
}

std::vector<std::string> ModelLibrary::names() const { return nsa::builtin_config_names(dir_); }

const std::vector<std::string>& probe_names() {
  static const std::vector<std::string> names = {"timing", "memory",    "finite", "precision", "gates",
                                                 "grad_coverage", "learning", "parity", "causality",
                                                 "invariants", "syncs", "cupti", "routing", "checksum"};
  return names;
}

ProbeSpec default_probe(const std::string& name) {
  ProbeSpec p;
  // The checksum reads every parameter back to the host: sampled unless asked otherwise.
  if (name == "checksum") p.every = kChecksumEveryDefault;
  return p;
}

std::map<std::string, ProbeSpec> default_probes() {
  std::map<std::string, ProbeSpec> probes;
  for (auto& name : probe_names()) probes[name] = default_probe(name);
  return probes;
}

}  // namespace harness
