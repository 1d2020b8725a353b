#include "harness/scenario/repro_yaml.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/scenario/settings.h"
#include "nsa/flags.h"

namespace harness {
namespace {
using nlohmann::json;

// JSON scalars are valid YAML flow scalars, and a JSON string is a
// double-quoted YAML scalar: a value never gets re-read as something else.
std::string scalar(const json& v) { return v.dump(); }

void emit(std::ostream& out, const json& v, int indent);

void emit_value(std::ostream& out, const json& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out << "\n";
    emit(out, v, indent + 2);
  } else if (v.is_array() && !v.empty()) {
    out << "\n";
    for (auto& item : v) {
      out << std::string(indent + 2, ' ') << "-";
      if (item.is_object() || item.is_array()) {
        // Nested containers in probe options: JSON flow is YAML flow.
        out << " " << item.dump() << "\n";
      } else {
        out << " " << scalar(item) << "\n";
      }
    }
  } else if (v.is_object()) {
    out << " {}\n";
  } else if (v.is_array()) {
    out << " []\n";
  } else {
    out << " " << scalar(v) << "\n";
  }
}

// Block mapping of `obj` at `indent`, null values left out (= not set).
void emit(std::ostream& out, const json& obj, int indent) {
  for (auto& [key, v] : obj.items()) {
    if (v.is_null()) continue;
    out << std::string(indent, ' ') << key << ":";
    emit_value(out, v, indent);
  }
}

void emit_section(std::ostream& out, const std::string& key, const json& v) {
  out << key << ":";
  emit_value(out, v, 0);
}

}  // namespace

std::string cell_to_scenario_yaml(const CellSpec& cell, const std::string& comment) {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "# A standalone copy of cell '" << cell.id << "' of " << cell.scenario_file << ".\n";

  const json j = cell;  // cell_spec.h's JSON: the same field names the scenario format uses
  // A spec built outside a scenario file may have no name; the format requires one.
  out << "name: " << (cell.scenario_name.empty() ? "repro" : cell.scenario_name) << "\n";
  out << "description: " << scalar("Repro of cell '" + cell.id + "' of scenario '" + cell.scenario_name + "'.")
      << "\n";
  out << "device: " << cell.device << "\n";
  emit_section(out, "model", j.at("model"));
  emit_section(out, "train", j.at("train"));

  out << "flags:";
  if (cell.flags.empty()) out << " {}";
  out << "\n";
  for (auto& [name, value] : cell.flags) {
    const nsa::FlagInfo* f = nsa::find_flag(name);
    bool text = f && f->type == nsa::FlagType::string;
    out << "  " << name << ": " << (text ? scalar(value) : value) << "\n";
  }
  emit_section(out, "faults", j.at("faults"));

  out << "probes:\n";
  for (auto& name : probe_names()) {
    auto it = cell.probes.find(name);
    const ProbeSpec* p = it == cell.probes.end() ? nullptr : &it->second;
    // `false` reads back as off with no sampling (every 0): right only for a
    // probe the file itself switched off. One the `probes` axis switched off
    // keeps its every and options, and `enabled: false` keeps them too.
    if (!p || (!p->enabled && p->every <= 0 && p->options.empty())) {
      out << "  " << name << ": false\n";
      continue;
    }
    const std::string off = p->enabled ? "" : "enabled: false, ";
    if (p->options.empty()) {
      out << "  " << name << ": {" << off << "every: " << p->every << "}\n";
      continue;
    }
    json m = p->options;
    if (!p->enabled) m["enabled"] = false;
    m["every"] = p->every;
    out << "  " << name << ":";
    emit_value(out, m, 2);
  }
  out << "observe_alternate: " << (cell.observe_alternate ? "true" : "false") << "\n";
  emit_section(out, "watchdog", j.at("watchdog"));
  emit_section(out, "gates", j.at("gates"));
  if (cell.expect) emit_section(out, "expect", *cell.expect);
  return out.str();
}

}  // namespace harness
