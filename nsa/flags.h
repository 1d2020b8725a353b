#pragma once
// NSA_* flags: one registry (name, type, default, doc). Values come from the
// environment or a scenario's `flags:`; an unknown NSA_* name is an error that
// lists the close matches, and a value is never guessed.
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nsa {

enum class FlagType { boolean, integer, string };

// Which models' code reads the flag. A dense-attention cell (`attention: dense`)
// runs the same trainer, embedding, MLP, norms, optimizer and probes as an NSA
// cell, with causal SDPA in place of the NSA layer; a flag that only the NSA
// layer reads (its paths, kernels and their launch settings) cannot change what
// such a cell computes nor how fast it runs, so the report takes one dense cell
// as the baseline of NSA cells that differ in it (harness/analysis/dense_baseline.h).
// every_model is the safe side: cells that differ in such a flag are never paired.
enum class FlagReach { every_model, nsa_layer_only };

struct FlagInfo {
  std::string_view name;
  FlagType type;
  std::string_view default_value;
  // Before the doc on purpose: a row cannot leave it out, so each flag's reach
  // is a decision (flags_test.cpp lists the NSA-layer-only ones with the reason).
  FlagReach reach;
  std::string_view doc;
  bool cuda_only = false;  // has an effect only on CUDA tensors; reported when it cannot take effect
  // A string flag that names one of a few choices: the only values accepted (a
  // misspelled choice would otherwise run as whatever the code does with text it
  // does not know). Empty: any text.
  std::vector<std::string_view> allowed = {};
};

const std::vector<FlagInfo>& flag_registry();
const FlagInfo* find_flag(std::string_view name);
// Registered names within edit distance 3 (or sharing a long prefix), best first.
std::vector<std::string> close_flag_matches(std::string_view name);
std::string_view to_string(FlagType t);

struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks one value against its flag's type (and its allowed values, where the
// flag lists them). Booleans accept 0/1/true/false only: YAML 1.1 words
// (on/off/yes/no) are refused rather than guessed.
// Returns an error message, or nothing when the value is valid.
std::optional<std::string> check_flag_value(const FlagInfo& f, std::string_view value);

// A resolved set of flag values. Construct from the environment (every NSA_*
// variable must be registered) and/or explicit overrides (a scenario's flags).
class Flags {
 public:
  Flags() = default;
  // Throws FlagError naming the variable and the close matches.
  static Flags from_environment();
  // Sets a value after checking name and type; throws FlagError.
  void set(std::string_view name, std::string_view value);

  bool get_bool(std::string_view name) const;
  long long get_int(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  bool is_set(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  // Values that differ from the default or were set explicitly.
  const std::map<std::string, std::string>& explicit_values() const { return values_; }

 private:
  std::string raw(std::string_view name) const;
  std::map<std::string, std::string> values_;
};

}  // namespace nsa
