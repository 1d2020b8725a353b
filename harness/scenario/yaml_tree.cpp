#include "harness/scenario/yaml_tree.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "harness/scenario/checker.h"
#include "harness/scenario/limits.h"
#include "harness/scenario/text_check.h"

namespace harness {

const YEntry* YNode::find_entry(const std::string& key) const {
  for (auto& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

const YNode* YNode::find(const std::string& key) const {
  const YEntry* e = find_entry(key);
  return e ? &e->value : nullptr;
}

std::string YNode::describe() const {
  switch (kind) {
    case Kind::null: return "nothing";
    case Kind::map: return "a mapping";
    case Kind::seq: return "a list";
    case Kind::scalar: return quote(text);
  }
  return "?";
}

int SourceSet::add(const std::string& path, const std::string& text) {
  SourceFile f{path, {}};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    f.lines.push_back(line);
  }
  files_.push_back(std::move(f));
  return static_cast<int>(files_.size()) - 1;
}

Diagnostic SourceSet::diagnostic(const Pos& pos, const std::string& key_path, const std::string& message) const {
  Diagnostic d;
  // Keys and messages quote what the file holds, which may be a megabyte long.
  d.key_path = excerpt(key_path, kMaxShownKeyPathChars);
  d.message = excerpt(message, 8 * kMaxShownLineChars);
  if (pos.file < 0 || pos.file >= static_cast<int>(files_.size())) return d;
  const SourceFile& f = files_[pos.file];
  d.file = f.path;
  d.line = pos.line;
  d.col = pos.col;
  if (pos.line < 1 || pos.line > static_cast<int>(f.lines.size())) return d;
  const std::string& line = f.lines[pos.line - 1];
  if (line.size() <= kMaxShownLineChars) {
    d.source_line = line;
    return d;
  }
  // A long line is shown as a window around the column, marked "...", cut at
  // character boundaries; source_shift keeps the caret under the column.
  auto boundary = [&](size_t i) {
    while (i > 0 && i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) --i;
    return std::min(i, line.size());
  };
  const size_t col0 = pos.col > 0 ? static_cast<size_t>(pos.col - 1) : 0;
  const size_t begin = boundary(col0 > kMaxShownLineChars / 2 ? col0 - kMaxShownLineChars / 2 : 0);
  const size_t end = boundary(begin + kMaxShownLineChars);
  d.source_line = (begin > 0 ? "..." : "") + line.substr(begin, end - begin) + (end < line.size() ? "..." : "");
  d.source_shift = begin > 0 ? static_cast<int>(begin) - 3 : 0;
  return d;
}

YNode merge_nodes(const YNode& base, const YNode& overlay) {
  if (!base.is_map() || !overlay.is_map()) return overlay;
  YNode out = base;
  out.pos = overlay.pos;
  // Hashed: two files of many keys each would otherwise merge in quadratic time.
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < out.entries.size(); ++i) index.emplace(out.entries[i].key, i);
  for (auto& e : overlay.entries) {
    auto it = index.find(e.key);
    if (it == index.end()) {
      index.emplace(e.key, out.entries.size());
      out.entries.push_back(e);
      continue;
    }
    YEntry& mine = out.entries[it->second];
    mine.value = merge_nodes(mine.value, e.value);
    mine.key_pos = e.key_pos;
  }
  return out;
}

namespace {
bool at_or_before(const Pos& a, const Pos& b) { return a.line < b.line || (a.line == b.line && a.col <= b.col); }
}  // namespace

std::string key_path_at(const YNode& root, const Pos& pos) {
  std::string path;
  const YNode* node = &root;
  // Descend into the last entry or item that starts at or before `pos`: in
  // document order it is the one whose text contains `pos`.
  while (node) {
    const YNode* next = nullptr;
    std::string step;
    if (node->is_map()) {
      for (auto& e : node->entries) {
        if (!at_or_before(e.key_pos, pos)) break;
        next = &e.value;
        step = join_path(path, e.key);
      }
    } else if (node->is_seq()) {
      for (size_t i = 0; i < node->items.size(); ++i) {
        if (!at_or_before(node->items[i].pos, pos)) break;
        next = &node->items[i];
        step = path + "[" + std::to_string(i) + "]";
      }
    }
    if (!next) break;
    path = step;
    node = next;
  }
  return path;
}

bool is_yaml11_bool_word(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "on" || l == "off" || l == "yes" || l == "no" || l == "y" || l == "n";
}

std::optional<long long> parse_integer(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return std::nullopt;
  // from_chars takes no '+'; its range error leaves nothing for a caller to misread.
  const char* first = s.data() + (s[0] == '+' ? 1 : 0);
  long long v = 0;
  auto [end, ec] = std::from_chars(first, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_integer_text(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  return true;
}

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  // strtod also reads "inf", "nan" and hex floats; none is a sensible setting.
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
      return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

nlohmann::json to_json(const YNode& node) {
  switch (node.kind) {
    case YNode::Kind::null: return nullptr;
    case YNode::Kind::scalar:
      if (!node.quoted) {
        if (auto i = parse_integer(node.text)) return *i;
        if (auto d = parse_number(node.text)) return *d;
        if (auto b = parse_bool(node.text)) return *b;
      }
      return node.text;
    case YNode::Kind::seq: {
      nlohmann::json a = nlohmann::json::array();
      for (auto& item : node.items) a.push_back(to_json(item));
      return a;
    }
    case YNode::Kind::map: {
      nlohmann::json o = nlohmann::json::object();
      for (auto& e : node.entries) o[e.key] = to_json(e.value);
      return o;
    }
  }
  return nullptr;
}

}  // namespace harness
