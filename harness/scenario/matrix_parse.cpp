#include "harness/scenario/matrix_parse.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "harness/scenario/limits.h"

#include "harness/scenario/settings_parse.h"
#include "harness/scenario/text_check.h"

namespace harness {
namespace {

std::string list_of(const std::vector<std::string>& v) {
  std::string out;
  for (auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Every exclude/include entry is matched against every cell.
bool within_entry_limit(const YNode& list, const std::string& path, Checker& check) {
  if (list.items.size() <= kMaxMatrixEntries) return true;
  check.error(list.pos, path, "a list of " + std::to_string(list.items.size()) + " entries, more than the limit of " +
                                  std::to_string(kMaxMatrixEntries));
  return false;
}

// The product of the axes' sizes, computed before any cell is built: a matrix
// of a million cells is refused in microseconds rather than after gigabytes.
bool product_within_limit(const ParsedMatrix& pm, Checker& check) {
  size_t product = 1;
  std::string sizes;
  for (auto& a : pm.input.axes) {
    sizes += (sizes.empty() ? "" : " × ") + std::to_string(a.values.size());
    product = product > kMaxMatrixProduct ? product : product * a.values.size();
  }
  if (product <= kMaxMatrixProduct) return true;
  check.error(pm.pos, "matrix", "the axes multiply to more than " + std::to_string(kMaxMatrixProduct) +
                                    " combinations (" + sizes + "), far past the limit of " +
                                    std::to_string(kMatrixMaxCells) + " cells: split the scenario");
  return false;
}

// `repeat: N`: one number that stands for the values 1…N.
void parse_count_axis(const YEntry& e, Checker& check, ModelLibrary& models, ParsedMatrix& pm) {
  const std::string path = "matrix." + e.key;
  if (!e.value.is_scalar()) {
    check.error(e.value.pos, path, "expected one positive integer (a count, e.g. `" + e.key + ": 3`), got " +
                                       e.value.describe());
    return;
  }
  auto v = check_axis_value(e.key, e.value, path, check, models);
  if (!v) return;
  const long long n = std::stoll(v->text);
  if (n > static_cast<long long>(kMaxAxisValues)) {
    check.error(e.value.pos, path, "a count of " + v->text + ", more than the limit of " +
                                       std::to_string(kMaxAxisValues) + " values of one axis");
    return;
  }
  MatrixAxis axis{e.key, {}};
  std::vector<ParsedValue> parsed;
  for (long long i = 1; i <= n; ++i) {
    axis.values.push_back(std::to_string(i));
    parsed.push_back(ParsedValue{AxisValue{axis.values.back(), axis.values.back()}, Origin{e.value.pos, path}});
  }
  pm.input.axes.push_back(std::move(axis));
  pm.axis_values.push_back(std::move(parsed));
}

void parse_axis(const YEntry& e, Checker& check, ModelLibrary& models, ParsedMatrix& pm) {
  const std::string path = "matrix." + e.key;
  if (!is_axis_name(e.key)) {
    check.error(e.key_pos, path, "unknown axis" + did_you_mean(e.key, known_axis_names()) +
                                     " (axes: a setting listed in docs/scenario-format.md or an NSA_* flag)");
    return;
  }
  if (find_axis(e.key)->count) {
    parse_count_axis(e, check, models, pm);
    return;
  }
  if (!e.value.is_seq() || e.value.items.empty()) {
    check.error(e.value.pos, path, "expected a non-empty list of values, got " + e.value.describe());
    return;
  }
  if (e.value.items.size() > kMaxAxisValues) {
    check.error(e.value.pos, path, "a list of " + std::to_string(e.value.items.size()) +
                                       " values, more than the limit of " + std::to_string(kMaxAxisValues) +
                                       " (the matrix may hold " + std::to_string(kMatrixMaxCells) + " cells)");
    return;
  }
  MatrixAxis axis{e.key, {}};
  std::vector<ParsedValue> parsed;
  std::unordered_set<std::string> seen;  // a list scan per value would be quadratic
  for (size_t i = 0; i < e.value.items.size(); ++i) {
    const YNode& item = e.value.items[i];
    const std::string item_path = index_path(path, i);
    auto v = check_axis_value(e.key, item, item_path, check, models);
    if (!v) continue;
    if (!seen.insert(v->text).second) {
      check.error(item.pos, item_path, "duplicate value " + quote(v->text) + ": it would run the same cells twice");
      continue;
    }
    axis.values.push_back(v->text);
    parsed.push_back(ParsedValue{*v, Origin{item.pos, item_path}});
  }
  if (axis.values.empty()) return;  // every value was reported
  pm.input.axes.push_back(std::move(axis));
  pm.axis_values.push_back(std::move(parsed));
}

const MatrixAxis* find_axis(const ParsedMatrix& pm, const std::string& name) {
  for (auto& a : pm.input.axes)
    if (a.name == name) return &a;
  return nullptr;
}

void parse_exclude(const YNode& list, Checker& check, ModelLibrary& models, ParsedMatrix& pm) {
  if (!check.expect_seq(list, "matrix.exclude", "a list of partial assignments")) return;
  if (!within_entry_limit(list, "matrix.exclude", check)) return;
  std::vector<std::string> axis_names;
  for (auto& a : pm.input.axes) axis_names.push_back(a.name);
  for (size_t i = 0; i < list.items.size(); ++i) {
    const YNode& entry = list.items[i];
    const std::string path = index_path("matrix.exclude", i);
    if (!check.expect_map(entry, path, "a mapping axis: value")) continue;
    AxisValues partial;
    bool ok = !entry.entries.empty();
    if (!ok) check.error(entry.pos, path, "an empty exclude entry would remove every cell");
    for (auto& kv : entry.entries) {
      const std::string kpath = join_path(path, kv.key);
      const MatrixAxis* axis = find_axis(pm, kv.key);
      if (!axis) {
        // A typo here would silently exclude nothing.
        check.error(kv.key_pos, kpath, "not an axis of this matrix" + did_you_mean(kv.key, axis_names));
        ok = false;
        continue;
      }
      auto v = check_axis_value(kv.key, kv.value, kpath, check, models);
      if (!v) { ok = false; continue; }
      if (std::find(axis->values.begin(), axis->values.end(), v->text) == axis->values.end()) {
        check.error(kv.value.pos, kpath, "matches no value of axis '" + kv.key + "' (values: " +
                                             list_of(axis->values) + ")");
        ok = false;
        continue;
      }
      partial.emplace_back(kv.key, v->text);
    }
    if (ok) pm.input.exclude.push_back(std::move(partial));
  }
}

void parse_include(const YNode& list, Checker& check, ModelLibrary& models, ParsedMatrix& pm) {
  if (!check.expect_seq(list, "matrix.include", "a list of assignments")) return;
  if (!within_entry_limit(list, "matrix.include", check)) return;
  for (size_t i = 0; i < list.items.size(); ++i) {
    const YNode& entry = list.items[i];
    const std::string path = index_path("matrix.include", i);
    if (!check.expect_map(entry, path, "a mapping axis: value (and expect)")) continue;
    if (entry.entries.empty()) {
      check.error(entry.pos, path, "an empty include entry does nothing");
      continue;
    }
    ParsedInclude inc;
    inc.pos = entry.pos;
    AxisValues plain;
    bool ok = true;
    for (auto& kv : entry.entries) {
      const std::string kpath = join_path(path, kv.key);
      if (kv.key == "expect") {
        inc.expect = parse_expect(kv.value, kpath, check);
        ok = ok && inc.expect.has_value();
        continue;
      }
      if (!is_axis_name(kv.key)) {
        auto candidates = known_axis_names();
        candidates.push_back("expect");
        check.error(kv.key_pos, kpath, "unknown axis" + did_you_mean(kv.key, candidates));
        ok = false;
        continue;
      }
      auto v = check_axis_value(kv.key, kv.value, kpath, check, models);
      if (!v) { ok = false; continue; }
      inc.values.emplace_back(kv.key, ParsedValue{*v, Origin{kv.value.pos, kpath}});
      plain.emplace_back(kv.key, v->text);
    }
    if (!ok) continue;
    pm.input.include.push_back(std::move(plain));
    pm.includes.push_back(std::move(inc));
  }
}

}  // namespace

const ParsedValue& ParsedMatrix::lookup(const MatrixCell& cell, const std::string& axis,
                                        const std::string& text) const {
  for (size_t a = 0; a < input.axes.size(); ++a) {
    if (input.axes[a].name != axis) continue;
    for (auto& v : axis_values[a])
      if (v.value.text == text) return v;
  }
  for (auto it = cell.includes.rbegin(); it != cell.includes.rend(); ++it)
    for (auto& [k, v] : includes[*it].values)
      if (k == axis && v.value.text == text) return v;
  throw std::logic_error("matrix cell value " + axis + "=" + text + " has no origin");
}

ParsedMatrix parse_matrix(const YEntry* matrix, Checker& check, ModelLibrary& models) {
  ParsedMatrix pm;
  if (!matrix || matrix->value.is_null()) return pm;
  pm.pos = matrix->key_pos;
  if (!check.expect_map(matrix->value, "matrix", "a mapping of axes (and exclude, include)")) return pm;
  pm.present = !matrix->value.entries.empty();
  for (auto& e : matrix->value.entries)
    if (e.key != "exclude" && e.key != "include") parse_axis(e, check, models, pm);
  if (!product_within_limit(pm, check)) {
    pm.input.axes.clear();  // nothing to expand; the error stops the load
    pm.axis_values.clear();
    return pm;
  }
  // Exclude entries are checked against the axes, so they are read after all axes.
  if (const YNode* ex = matrix->value.find("exclude")) parse_exclude(*ex, check, models, pm);
  if (const YNode* inc = matrix->value.find("include")) parse_include(*inc, check, models, pm);
  return pm;
}

std::vector<MatrixCell> expand_checked(const ParsedMatrix& pm, Checker& check, std::vector<std::string>& warnings) {
  std::vector<MatrixCell> cells = expand_matrix(pm.input);
  if (cells.empty()) {
    check.error(pm.pos, "matrix", "the matrix has no cells: exclude removes every combination");
    return cells;
  }
  std::map<std::string, size_t> seen;
  for (auto& c : cells) {
    if (seen.count(c.id) && !c.includes.empty()) {
      const ParsedInclude& inc = pm.includes[c.includes.back()];
      check.error(inc.pos, "matrix.include[" + std::to_string(c.includes.back()) + "]",
                  "adds the cell '" + c.id + "' a second time");
    }
    seen[c.id]++;
  }
  if (cells.size() > kMatrixMaxCells) {
    check.error(pm.pos, "matrix", "expands to " + std::to_string(cells.size()) + " cells, more than the limit of " +
                                      std::to_string(kMatrixMaxCells) + ": split the scenario or exclude cells");
  } else if (cells.size() > kMatrixWarnCells) {
    warnings.push_back("matrix expands to " + std::to_string(cells.size()) + " cells (more than " +
                       std::to_string(kMatrixWarnCells) + "): each cell is a process that trains a model");
  }
  return cells;
}

}  // namespace harness
