#include "harness/scenario/yaml_tree.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

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
    case Kind::scalar: return "'" + text + "'";
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
  d.key_path = key_path;
  d.message = message;
  if (pos.file < 0 || pos.file >= static_cast<int>(files_.size())) return d;
  const SourceFile& f = files_[pos.file];
  d.file = f.path;
  d.line = pos.line;
  d.col = pos.col;
  if (pos.line >= 1 && pos.line <= static_cast<int>(f.lines.size())) d.source_line = f.lines[pos.line - 1];
  return d;
}

namespace {
Pos pos_of(const YAML::Mark& m, int file) { return Pos{file, m.line + 1, m.column + 1}; }

YNode convert(const YAML::Node& n, int file, const SourceSet& sources, std::vector<Diagnostic>& diags) {
  YNode out;
  out.pos = pos_of(n.Mark(), file);
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: out.kind = YNode::Kind::null; break;
    case YAML::NodeType::Scalar:
      out.kind = YNode::Kind::scalar;
      out.text = n.Scalar();
      // yaml-cpp tags plain scalars "?" and quoted ones "!"; an explicit tag
      // (!!str) also means "take the text as written".
      out.quoted = n.Tag() != "?";
      break;
    case YAML::NodeType::Sequence:
      out.kind = YNode::Kind::seq;
      for (const auto& item : n) out.items.push_back(convert(item, file, sources, diags));
      break;
    case YAML::NodeType::Map:
      out.kind = YNode::Kind::map;
      for (auto it = n.begin(); it != n.end(); ++it) {
        YEntry e;
        e.key_pos = pos_of(it->first.Mark(), file);
        if (!it->first.IsScalar()) {
          diags.push_back(sources.diagnostic(e.key_pos, "", "mapping keys must be plain names"));
          continue;
        }
        e.key = it->first.Scalar();
        if (const YEntry* first = out.find_entry(e.key)) {
          diags.push_back(sources.diagnostic(e.key_pos, e.key,
                                             "duplicate key (first given on line " +
                                                 std::to_string(first->key_pos.line) + ")"));
          continue;
        }
        e.value = convert(it->second, file, sources, diags);
        // A null value has no text of its own to point at; its key does.
        if (e.value.is_null()) e.value.pos = e.key_pos;
        out.entries.push_back(std::move(e));
      }
      break;
  }
  return out;
}
}  // namespace

std::optional<YNode> parse_yaml(const std::string& text, int file_index, const SourceSet& sources,
                                std::vector<Diagnostic>& diags) {
  try {
    YAML::Node root = YAML::Load(text);
    YNode tree = convert(root, file_index, sources, diags);
    if (tree.is_null()) tree.pos = Pos{file_index, 1, 1};
    return tree;
  } catch (const YAML::Exception& e) {
    diags.push_back(sources.diagnostic(pos_of(e.mark, file_index), "", "YAML syntax error: " + e.msg));
    return std::nullopt;
  }
}

YNode merge_nodes(const YNode& base, const YNode& overlay) {
  if (!base.is_map() || !overlay.is_map()) return overlay;
  YNode out = base;
  out.pos = overlay.pos;
  for (auto& e : overlay.entries) {
    bool merged = false;
    for (auto& mine : out.entries) {
      if (mine.key != e.key) continue;
      mine.value = merge_nodes(mine.value, e.value);
      mine.key_pos = e.key_pos;
      merged = true;
      break;
    }
    if (!merged) out.entries.push_back(e);
  }
  return out;
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
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return v;
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
