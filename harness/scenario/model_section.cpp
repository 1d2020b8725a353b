#include "harness/scenario/model_section.h"

#include <yaml-cpp/yaml.h>

namespace harness {
namespace {

YAML::Node to_yaml_cpp(const YNode& n) {
  switch (n.kind) {
    case YNode::Kind::null: return YAML::Node(YAML::NodeType::Null);
    case YNode::Kind::scalar: return YAML::Node(n.text);
    case YNode::Kind::seq: {
      YAML::Node s(YAML::NodeType::Sequence);
      for (auto& item : n.items) s.push_back(to_yaml_cpp(item));
      return s;
    }
    case YNode::Kind::map: {
      YAML::Node m(YAML::NodeType::Map);
      for (auto& e : n.entries) m[e.key] = to_yaml_cpp(e.value);
      return m;
    }
  }
  return {};
}

// nsa::ConfigIssue keys are dotted paths inside the config; positions come
// from our tree (the config may be merged from several files).
Pos issue_pos(const YNode& model, const Pos& fallback, const nsa::ConfigIssue& issue) {
  const YNode* node = &model;
  const YEntry* entry = nullptr;
  std::string rest = issue.key;
  while (!rest.empty() && node && node->is_map()) {
    size_t dot = rest.find('.');
    entry = node->find_entry(rest.substr(0, dot));
    if (!entry) break;
    node = &entry->value;
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
  }
  if (!entry || !rest.empty()) return fallback;
  return issue.message.rfind("unknown key", 0) == 0 ? entry->key_pos : entry->value.pos;
}

}  // namespace

void parse_model(const YEntry& e, Checker& check, ModelLibrary& models, CellDraft& base) {
  CellSpec& s = base.spec;
  base.origins["model"] = Origin{e.value.pos, "model"};
  std::string error;
  if (e.value.is_scalar()) {
    if (auto c = models.get(e.value.text, error)) {
      s.model = *c;
      s.model_name = e.value.text;
    } else {
      check.error(e.value.pos, "model", error);
    }
    return;
  }
  if (!check.expect_map(e.value, "model", "a config name or a mapping")) return;
  nsa::ModelConfig start;
  YNode body = e.value;
  body.entries.clear();
  for (auto& sub : e.value.entries) {
    if (sub.key != "base") {
      body.entries.push_back(sub);
      continue;
    }
    auto name = check.string(sub.value, "model.base");
    if (!name) continue;
    if (auto c = models.get(*name, error)) start = *c;
    else check.error(sub.value.pos, "model.base", error);
  }
  std::vector<nsa::ConfigIssue> issues;
  s.model = nsa::model_config_from_yaml(to_yaml_cpp(body), issues, start);
  for (auto& issue : issues) {
    std::string path = issue.key.empty() ? "model" : "model." + issue.key;
    check.error(issue_pos(body, e.key_pos, issue), path, issue.message);
  }
  // An inline config is only "tiny" if it says so: a changed copy is not tiny.
  s.model_name = e.value.find("name") ? s.model.name : "inline";
  if (!e.value.find("name")) s.model.name = "inline";
}

}  // namespace harness
