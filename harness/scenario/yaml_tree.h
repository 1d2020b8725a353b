#pragma once
// A scenario's YAML as a small tree of our own. yaml-cpp's nodes do not know
// which file they came from, and `extends` merges nodes of several files into
// one tree, so every node here carries (file, line, col) and whether a scalar
// was quoted (which YAML 1.1 boolean checks need).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/diagnostic.h"

namespace harness {

struct Pos {
  int file = -1;  // index into SourceSet::files; -1 = unknown
  int line = 0;   // 1-based
  int col = 0;    // 1-based
};

struct YEntry;

struct YNode {
  enum class Kind { null, scalar, map, seq };
  Kind kind = Kind::null;
  std::string text;     // scalar text as written (without quotes)
  bool quoted = false;  // quoted, block or explicitly tagged scalar: never a number/bool
  Pos pos;
  std::vector<YEntry> entries;  // map entries, in written order
  std::vector<YNode> items;     // sequence items

  bool is_map() const { return kind == Kind::map; }
  bool is_seq() const { return kind == Kind::seq; }
  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_null() const { return kind == Kind::null; }
  const YNode* find(const std::string& key) const;
  const YEntry* find_entry(const std::string& key) const;
  // "a mapping", "a list", "nothing", "'text'": for "expected X, got Y" messages.
  std::string describe() const;
};

struct YEntry {
  std::string key;
  Pos key_pos;
  YNode value;
};

// The files a scenario was read from, with their lines for diagnostics.
struct SourceFile {
  std::string path;  // as it will be shown in diagnostics
  std::vector<std::string> lines;
};

class SourceSet {
 public:
  int add(const std::string& path, const std::string& text);
  const SourceFile& file(int index) const { return files_.at(index); }
  Diagnostic diagnostic(const Pos& pos, const std::string& key_path, const std::string& message) const;

 private:
  std::vector<SourceFile> files_;
};

// Parses `text` (already registered as file `file_index`; yaml_events.cpp). A
// syntax error, an alias inside the node it names, a tree past kMaxYamlNodes or
// kMaxYamlDepth, or a value that is not UTF-8 becomes a diagnostic and the result is empty.
std::optional<YNode> parse_yaml(const std::string& text, int file_index, const SourceSet& sources,
                                std::vector<Diagnostic>& diags);

// `extends` semantics: mappings merge key by key (overlay wins, new keys go
// after the base's), anything else in the overlay replaces the base.
YNode merge_nodes(const YNode& base, const YNode& overlay);

// The key path of the node whose text contains `pos` ("train.seq_len"), for
// problems found in the bytes before the tree was read; "" at the top level.
std::string key_path_at(const YNode& root, const Pos& pos);

// Plain scalars become numbers, booleans or null where YAML 1.2's core schema
// says so; quoted scalars stay strings. Object keys are sorted (nlohmann::json),
// which keeps hashes of the result independent of key order.
nlohmann::json to_json(const YNode& node);

// YAML 1.2 core schema readings of a plain scalar.
bool is_yaml11_bool_word(const std::string& s);  // on/off/yes/no/y/n in any case
std::optional<long long> parse_integer(const std::string& s);  // nothing outside long long's range
bool is_integer_text(const std::string& s);                     // [+-]digits, of any length
std::optional<double> parse_number(const std::string& s);  // finite only
std::optional<bool> parse_bool(const std::string& s);       // true/false (True, TRUE)

}  // namespace harness
