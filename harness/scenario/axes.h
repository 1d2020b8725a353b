#pragma once
// The matrix axes: one table (axis_table(), in axes.cpp) of rows {name, where it
// applies, doc, how a value is checked, what it sets}; every registered NSA_*
// flag is an axis too, through one shared row. Adding an axis is adding a row.
// Also the checks a flag value or a fault name gets wherever it is written
// (`flags:`, `faults:`, or a matrix axis).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/scenario/checker.h"
#include "harness/scenario/settings.h"

namespace harness {

// One accepted axis value: `text` as written (it goes into cell ids and is what
// exclude/include entries match) and `setting`, what the cell gets (differs
// only where a value is resolved, e.g. a `bytes:` path made absolute).
struct AxisValue {
  std::string text;
  std::string setting;
};

// Where an axis's setting lands. `model_config` replaces the whole model
// config, so it is applied before the axes that edit one of its fields.
enum class AxisTarget { model_config, model, train, flags, cell };

// What a check function may use: the diagnostics sink and the model configs.
struct AxisCheck {
  Checker& check;
  ModelLibrary& models;
};

struct AxisDef {
  std::string_view name;
  AxisTarget target;
  std::string_view values;      // doc: the values it takes (docs/scenario-format.md, "Axis names")
  std::string_view sets;        // doc: what it sets
  std::string_view origin_key;  // CellDraft::origins key recorded when applied ("" = none is read)
  // Accepts one written value (nothing after reporting the problem). `axis` is
  // the axis name (the flag's name for the shared NSA_* row).
  std::optional<AxisValue> (*check)(const std::string& axis, const YNode& value, const std::string& path,
                                    AxisCheck& c);
  // Sets what an accepted value maps onto.
  void (*apply)(CellSpec& spec, const std::string& axis, const std::string& setting, ModelLibrary& models);
  // A count axis is written as one number N, not a list, and takes the values
  // 1…N (`repeat: 3`: every cell three times, with distinct ids).
  bool count = false;
};

// The axes that are not flags, in the order the format doc lists them.
const std::vector<AxisDef>& axis_table();
// The row of `name` (a table row, the shared NSA_* flag row or the shared row of
// the model's fields, `model.<key>` / `model.nsa.<key>`), or null.
const AxisDef* find_axis(const std::string& name);

// The table's names, then every model field (`model.d_k`, `model.nsa.window`, …),
// then every registered NSA_* flag.
std::vector<std::string> known_axis_names();
bool is_axis_name(const std::string& name);
// True for an axis that must be applied before the others of a cell (`model`).
bool applies_first(const std::string& axis);

// Checks one value of `axis` (a known axis name; a matrix value or an include
// entry's); nothing after reporting the problem.
std::optional<AxisValue> check_axis_value(const std::string& axis, const YNode& value, const std::string& path,
                                          Checker& check, ModelLibrary& models);

// Sets what the axis maps onto and records where it came from. `setting` was
// accepted by check_axis_value. Apply the axes for which applies_first() holds first.
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
