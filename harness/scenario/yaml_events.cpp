// parse_yaml: yaml-cpp's event parser → our YNode tree, within budgets.
//
// YAML::Load builds yaml-cpp's node graph, in which an alias *is* the node it
// names: `a: &L [*L]` becomes a cycle and nested aliases a DAG that unfolds
// exponentially ("billion laughs"). Any walk of that graph (ours, or its own
// iterators) then recurses forever or copies without end. Reading the event
// stream instead, an alias is copied here, where its cost is counted against
// kMaxYamlNodes / kMaxYamlScalarBytes and an alias inside the node it names
// (still open when the alias arrives) is refused.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>
#include <unordered_map>

#include "harness/scenario/checker.h"
#include "harness/scenario/limits.h"
#include "harness/scenario/text_check.h"
#include "harness/scenario/yaml_tree.h"

namespace harness {
namespace {

// Thrown out of yaml-cpp's parser once a budget is spent; its diagnostic is recorded first.
struct Abort {};

struct Cost {
  size_t nodes = 0;
  size_t bytes = 0;
};

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(int file, const SourceSet& sources, std::vector<Diagnostic>& diags)
      : file_(file), sources_(sources), diags_(diags) {}

  std::optional<YNode> root;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    charge(Cost{1, 0}, m);
    YNode n;
    n.pos = pos_of(m);
    finish(std::move(n), anchor, Cost{1, 0}, m);
  }

  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    // Escapes ("\0", "\xff", "\ud800") can put into a value what the file's bytes could not.
    if (value.find('\0') != std::string::npos) fail(m, "the value contains a NUL character (an escape \\0?)");
    if (!is_valid_utf8(value)) fail(m, "the value is not valid UTF-8 (an escape of a lone surrogate or a raw byte?)");
    charge(Cost{1, value.size()}, m);
    YNode n;
    n.kind = YNode::Kind::scalar;
    n.pos = pos_of(m);
    n.text = value;
    // Plain scalars are tagged "?", quoted ones "!"; an explicit tag (!!str)
    // also means "take the text as written".
    n.quoted = tag != "?";
    finish(std::move(n), anchor, Cost{1, value.size()}, m);
  }

  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    // yaml-cpp refuses an alias to an undefined anchor itself; one it knows that
    // is not complete here is still open: the alias sits inside the node it names.
    if (it == anchors_.end())
      fail(m, "the alias *" + names_[anchor] + " is inside the node it names: that node would contain itself");
    charge(it->second.cost, m);
    finish(YNode(it->second.node), 0, it->second.cost, m);
  }

  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(YNode::Kind::seq, m, anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(YNode::Kind::map, m, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YNode node;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    Cost cost{1, 0};
    std::optional<YNode> key;                    // a map's key, waiting for its value
    std::unordered_map<std::string, int> lines;  // a map's keys → the line each was given on
  };
  struct Anchored {
    YNode node;
    Cost cost;
  };

  Pos pos_of(const YAML::Mark& m) const { return Pos{file_, m.line + 1, m.column + 1}; }

  // Where the node being read sits: "matrix.include[2].seq_len".
  std::string current_path() const {
    std::string path;
    for (auto& f : stack_) {
      if (f.node.is_seq()) path = index_path(path, f.node.items.size());
      else if (f.key && f.key->is_scalar()) path = join_path(path, f.key->text);
    }
    return path;
  }

  [[noreturn]] void fail(const YAML::Mark& m, const std::string& message) {
    diags_.push_back(sources_.diagnostic(pos_of(m), current_path(), message));
    throw Abort{};
  }

  void charge(const Cost& c, const YAML::Mark& m) {
    total_.nodes += c.nodes;
    total_.bytes += c.bytes;
    if (total_.nodes > kMaxYamlNodes)
      fail(m, "the document exceeds the node budget of " + std::to_string(kMaxYamlNodes) +
                  " YAML nodes (aliases count as the copies they make): a scenario is far smaller");
    if (total_.bytes > kMaxYamlScalarBytes)
      fail(m, "the document's values exceed the budget of " + std::to_string(kMaxYamlScalarBytes >> 20) +
                  " MiB (aliases count as the copies they make)");
  }

  void open(YNode::Kind kind, const YAML::Mark& m, YAML::anchor_t anchor) {
    if (stack_.size() >= static_cast<size_t>(kMaxYamlDepth))
      fail(m, "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep");
    charge(Cost{1, 0}, m);
    if (anchor) names_[anchor] = anchor_name_;
    Frame f;
    f.node.kind = kind;
    f.node.pos = pos_of(m);
    f.anchor = anchor;
    f.mark = m;
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.key) add_entry(f, std::move(*f.key), YNode{});  // a key without a value event (not expected)
    finish(std::move(f.node), f.anchor, f.cost, f.mark);
  }

  // A completed node: remember it for aliases, then hand it to its parent.
  void finish(YNode n, YAML::anchor_t anchor, const Cost& cost, const YAML::Mark& m) {
    if (anchor) {
      // The stored copy costs what the node does: nested anchors would otherwise
      // keep one copy per level.
      charge(cost, m);
      anchors_[anchor] = Anchored{n, cost};
    }
    if (stack_.empty()) {
      root = std::move(n);
      return;
    }
    Frame& parent = stack_.back();
    parent.cost.nodes += cost.nodes;
    parent.cost.bytes += cost.bytes;
    if (parent.node.is_seq()) {
      parent.node.items.push_back(std::move(n));
    } else if (!parent.key) {
      parent.key = std::move(n);
    } else {
      YNode key = std::move(*parent.key);
      parent.key.reset();
      add_entry(parent, std::move(key), std::move(n));
    }
  }

  void add_entry(Frame& map, YNode key, YNode value) {
    if (!key.is_scalar()) {
      diags_.push_back(sources_.diagnostic(key.pos, "", "mapping keys must be plain names"));
      return;
    }
    YEntry e;
    e.key = std::move(key.text);
    e.key_pos = key.pos;
    auto [first, inserted] = map.lines.emplace(e.key, e.key_pos.line);
    if (!inserted) {
      diags_.push_back(sources_.diagnostic(e.key_pos, e.key,
                                           "duplicate key (first given on line " + std::to_string(first->second) +
                                               ")"));
      return;
    }
    e.value = std::move(value);
    // A null value has no text of its own to point at; its key does.
    if (e.value.is_null()) e.value.pos = e.key_pos;
    map.node.entries.push_back(std::move(e));
  }

  int file_;
  const SourceSet& sources_;
  std::vector<Diagnostic>& diags_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  std::map<YAML::anchor_t, std::string> names_;
  std::string anchor_name_;
  Cost total_;
};

}  // namespace

std::optional<YNode> parse_yaml(const std::string& text, int file_index, const SourceSet& sources,
                                std::vector<Diagnostic>& diags) {
  TreeBuilder builder(file_index, sources, diags);
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);  // the first document, as YAML::Load reads it
  } catch (const YAML::Exception& e) {
    Pos pos{file_index, e.mark.line + 1, e.mark.column + 1};
    if (e.mark.is_null()) pos = Pos{file_index, 0, 0};
    diags.push_back(sources.diagnostic(pos, "", "YAML syntax error: " + e.msg));
    return std::nullopt;
  } catch (const Abort&) {
    return std::nullopt;
  }
  YNode tree = builder.root ? std::move(*builder.root) : YNode{};
  if (!builder.root || tree.is_null()) tree.pos = Pos{file_index, 1, 1};
  return tree;
}

}  // namespace harness
