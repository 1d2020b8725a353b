#pragma once
// Typed reads of YAML nodes that never throw: each problem becomes a
// Diagnostic (with the node's position and key path) and the read returns
// nothing, so validation goes on and reports every problem in one pass.
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/yaml_tree.h"

namespace harness {

// Most integer settings (steps, batch, seq_len, every, ...) are `int`s in CellSpec.
inline constexpr long long kMaxIntSetting = 2147483647;

class Checker {
 public:
  Checker(const SourceSet& sources, std::vector<Diagnostic>& diags) : sources_(sources), diags_(diags) {}

  void error(const Pos& pos, const std::string& key_path, const std::string& message);
  size_t error_count() const { return diags_.size(); }
  const SourceSet& sources() const { return sources_; }

  // True when `n` is a mapping; otherwise reports "expected <what>, got …".
  bool expect_map(const YNode& n, const std::string& path, const std::string& what = "a mapping");
  bool expect_seq(const YNode& n, const std::string& path, const std::string& what = "a list");
  // Reports every key of `map` not in `allowed`, with a suggestion.
  void check_keys(const YNode& map, const std::string& path, const std::vector<std::string>& allowed);

  std::optional<std::string> string(const YNode& n, const std::string& path);
  std::optional<std::string> one_of(const YNode& n, const std::string& path, const std::vector<std::string>& choices);
  // Integers up to `max` (by default what an `int` setting holds); a larger one
  // is refused with the limit named.
  std::optional<long long> positive_int(const YNode& n, const std::string& path, long long max = kMaxIntSetting);
  std::optional<long long> non_negative_int(const YNode& n, const std::string& path, long long max = kMaxIntSetting);
  std::optional<double> number(const YNode& n, const std::string& path);
  std::optional<double> positive_number(const YNode& n, const std::string& path);
  std::optional<double> non_negative_number(const YNode& n, const std::string& path);
  std::optional<double> fraction(const YNode& n, const std::string& path);  // in [0, 1]
  std::optional<bool> boolean(const YNode& n, const std::string& path);

 private:
  const SourceSet& sources_;
  std::vector<Diagnostic>& diags_;
};

// "a.b" joined with "c" → "a.b.c"; an empty prefix gives "c".
std::string join_path(const std::string& prefix, const std::string& key);
std::string index_path(const std::string& prefix, size_t i);  // "faults[2]"

}  // namespace harness
