#include "harness/core/cell_spec.h"

#include <yaml-cpp/yaml.h>

namespace harness {
using nlohmann::json;

namespace {
// Each struct's fields listed once; writing and reading walk the same list.
template <class T, class Visit>
void visit_train(T& t, Visit&& visit) {
  visit("steps", t.steps); visit("batch", t.batch); visit("seq_len", t.seq_len); visit("lr", t.lr);
  visit("warmup_steps", t.warmup_steps); visit("weight_decay", t.weight_decay); visit("grad_clip", t.grad_clip);
  visit("precision", t.precision); visit("master_weights", t.master_weights); visit("data", t.data);
  visit("seed", t.seed); visit("world_size", t.world_size); visit("deterministic", t.deterministic);
}

template <class T, class Visit>
void visit_watchdog(T& w, Visit&& visit) {
  visit("first_step_timeout_s", w.first_step_timeout_s); visit("stall_timeout_s", w.stall_timeout_s);
  visit("step_timeout_s", w.step_timeout_s); visit("slow_step_factor", w.slow_step_factor);
}

auto write_to(json& to) {
  return [&to](const char* key, const auto& field) { to[key] = field; };
}
// Fields absent from the JSON keep their defaults.
auto read_from(const json& from) {
  return [&from](const char* key, auto& field) { field = from.value(key, field); };
}

// The model's fields come from its one field list (nsa/config.h).
json model_to_json(const nsa::ModelConfig& m) {
  json j = json::object(), n = json::object();
  nsa::visit_model_fields(m, write_to(j));
  nsa::visit_nsa_params(m.nsa, write_to(n));
  j["nsa"] = n;
  return j;
}

nsa::ModelConfig model_from_json(const json& j) {
  nsa::ModelConfig m;
  nsa::visit_model_fields(m, read_from(j));
  if (j.contains("nsa")) nsa::visit_nsa_params(m.nsa, read_from(j.at("nsa")));
  return m;
}
}  // namespace

void to_json(json& j, const CellSpec& c) {
  json axes = json::array();
  for (auto& [k, v] : c.axes) axes.push_back(json::array({k, v}));
  json probes = json::object();
  for (auto& [name, p] : c.probes) probes[name] = json{{"enabled", p.enabled}, {"every", p.every}, {"options", p.options}};
  j = json{{"id", c.id},
           {"axes", axes},
           {"scenario_name", c.scenario_name},
           {"scenario_file", c.scenario_file},
           {"model_name", c.model_name},
           {"model", model_to_json(c.model)},
           {"flags", c.flags},
           {"faults", c.faults},
           {"from_environment", c.from_environment},
           {"probes", probes},
           {"gates", c.gates},
           {"device", c.device},
           {"expect", c.expect ? *c.expect : json(nullptr)},
           {"observe_alternate", c.observe_alternate}};
  visit_train(c.train, write_to(j["train"]));
  visit_watchdog(c.watchdog, write_to(j["watchdog"]));
}

void from_json(const json& j, CellSpec& c) {
  c.id = j.at("id").get<std::string>();
  c.axes.clear();
  for (auto& kv : j.value("axes", json::array())) c.axes.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  c.scenario_name = j.value("scenario_name", "");
  c.scenario_file = j.value("scenario_file", "");
  c.model_name = j.value("model_name", "");
  c.model = model_from_json(j.at("model"));
  visit_train(c.train, read_from(j.at("train")));
  c.flags = j.value("flags", std::map<std::string, std::string>{});
  c.faults = j.value("faults", std::vector<std::string>{});
  c.from_environment = j.value("from_environment", std::vector<std::string>{});
  c.probes.clear();
  const json probes = j.value("probes", json::object());  // named: items() must not outlive its json
  for (auto& [name, p] : probes.items())
    c.probes[name] = ProbeSpec{p.value("enabled", true), p.value("every", 1), p.value("options", json::object())};
  const json w = j.value("watchdog", json::object());
  visit_watchdog(c.watchdog, read_from(w));
  c.gates = j.value("gates", json::object()).get<GateSpec>();
  c.device = j.value("device", "auto");
  c.observe_alternate = j.value("observe_alternate", false);
  if (j.contains("expect") && !j.at("expect").is_null()) c.expect = j.at("expect"); else c.expect.reset();
}

}  // namespace harness
