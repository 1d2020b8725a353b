#pragma once
// Axis names and the settings they set (docs/scenario-format.md, "Axis names"),
// plus the checks a flag value or a fault name gets wherever it is written
// (`flags:`, `faults:`, or a matrix axis).
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/checker.h"
#include "harness/scenario/settings.h"

namespace harness {

// prefill, precision, seq_len, …, then every registered NSA_* flag.
std::vector<std::string> known_axis_names();
bool is_axis_name(const std::string& name);

// One accepted axis value: `text` as written (it goes into cell ids and is what
// exclude/include entries match) and `setting`, what the cell gets (differs
// only where a value is resolved, e.g. a `bytes:` path made absolute).
struct AxisValue {
  std::string text;
  std::string setting;
};

// Checks one value of `axis` (a matrix value or an include entry's); nothing
// after reporting the problem.
std::optional<AxisValue> check_axis_value(const std::string& axis, const YNode& value, const std::string& path,
                                          Checker& check, ModelLibrary& models);

// Sets what the axis maps onto. `setting` was accepted by check_axis_value.
// A `model` value replaces the whole model config, so apply it before `phi`.
void apply_axis(CellDraft& cell, const std::string& axis, const std::string& setting, const Origin& origin,
                ModelLibrary& models);

// `synthetic`, or `bytes:<file>` with the file relative to the YAML file that
// names it; returns the setting (the file made absolute).
std::optional<std::string> check_data(const YNode& value, const std::string& path, Checker& check);

// A flag's value as text, after refusing unknown names (with close matches),
// YAML 1.1 boolean words, and values of the wrong type.
std::optional<std::string> check_flag(const std::string& name, const Pos& name_pos, const YNode& value,
                                      const std::string& path, Checker& check);

// The `probes` axis: `all`, `none`, `alternate` (the file's probes on even steps,
// none on odd ones, in one process), or probe names joined by '+'
// ("cupti+finite": only those probes run), each name checked with close matches.
std::optional<std::string> check_probes_value(const YNode& value, const std::string& path, Checker& check);

// A registered fault name (or "none" when allow_none), with close matches otherwise.
std::optional<std::string> check_fault(const YNode& value, const std::string& path, Checker& check, bool allow_none);

}  // namespace harness
