#include "harness/run/dry_run.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace harness::run {
namespace {

// Fields that name the cell rather than set it: its id, its axis list (the
// settings they map onto are listed instead), where it came from.
bool is_bookkeeping(const std::string& key) {
  return key == "id" || key == "axes" || key == "scenario_file" || key == "from_environment" || key == "device";
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (prefix.empty() && is_bookkeeping(it.key())) continue;
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
    return;
  }
  out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

CellListing list_cells(const std::vector<CellSpec>& cells) {
  std::vector<std::map<std::string, std::string>> flat;
  std::vector<std::string> keys;  // in first-seen order
  for (const auto& c : cells) {
    flat.emplace_back();
    flatten(nlohmann::json(c), "", flat.back());
    for (auto& [k, v] : flat.back())
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  CellListing out;
  out.columns = {"id", "device"};
  for (const auto& k : keys) {
    const auto value_in = [&](const std::map<std::string, std::string>& m) {
      auto it = m.find(k);
      return it == m.end() ? std::string("-") : it->second;
    };
    const std::string first = value_in(flat.front());
    if (std::any_of(flat.begin(), flat.end(), [&](const auto& m) { return value_in(m) != first; }))
      out.columns.push_back(k);
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    std::vector<std::string> row{cells[i].id, cells[i].device};
    for (size_t c = 2; c < out.columns.size(); ++c) {
      auto it = flat[i].find(out.columns[c]);
      row.push_back(it == flat[i].end() ? "-" : it->second);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::string render_listing(const CellListing& l) {
  std::vector<size_t> width(l.columns.size());
  for (size_t c = 0; c < l.columns.size(); ++c) {
    width[c] = l.columns[c].size();
    for (const auto& r : l.rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      s += cells[c];
      if (c + 1 < cells.size()) s += std::string(width[c] - cells[c].size() + 2, ' ');
    }
    return s + "\n";
  };
  std::string out = line(l.columns);
  for (const auto& r : l.rows) out += line(r);
  return out + std::to_string(l.rows.size()) + " cell(s); nothing was run\n";
}

}  // namespace harness::run
