#include "harness/core/cell_spec.h"

#include <yaml-cpp/yaml.h>

namespace harness {
using nlohmann::json;

namespace {
json model_to_json(const nsa::ModelConfig& m) {
  return json{{"name", m.name},
              {"vocab", m.vocab},
              {"d_model", m.d_model},
              {"n_layers", m.n_layers},
              {"n_heads", m.n_heads},
              {"n_kv_groups", m.n_kv_groups},
              {"d_k", m.d_k},
              {"d_v", m.d_v},
              {"ffn_hidden", m.ffn_hidden},
              {"gate_hidden", m.gate_hidden},
              {"rope_base", m.rope_base},
              {"norm_eps", m.norm_eps},
              {"max_seq_len", m.max_seq_len},
              {"attention", m.attention},
              {"nsa",
               {{"cmp_block", m.nsa.cmp_block},
                {"cmp_stride", m.nsa.cmp_stride},
                {"sel_block", m.nsa.sel_block},
                {"sel_count", m.nsa.sel_count},
                {"window", m.nsa.window},
                {"phi", m.nsa.phi}}}};
}

nsa::ModelConfig model_from_json(const json& j) {
  nsa::ModelConfig m;
  m.name = j.value("name", m.name);
  m.vocab = j.value("vocab", m.vocab);
  m.d_model = j.value("d_model", m.d_model);
  m.n_layers = j.value("n_layers", m.n_layers);
  m.n_heads = j.value("n_heads", m.n_heads);
  m.n_kv_groups = j.value("n_kv_groups", m.n_kv_groups);
  m.d_k = j.value("d_k", m.d_k);
  m.d_v = j.value("d_v", m.d_v);
  m.ffn_hidden = j.value("ffn_hidden", m.ffn_hidden);
  m.gate_hidden = j.value("gate_hidden", m.gate_hidden);
  m.rope_base = j.value("rope_base", m.rope_base);
  m.norm_eps = j.value("norm_eps", m.norm_eps);
  m.max_seq_len = j.value("max_seq_len", m.max_seq_len);
  m.attention = j.value("attention", m.attention);
  if (j.contains("nsa")) {
    const json& n = j.at("nsa");
    m.nsa.cmp_block = n.value("cmp_block", m.nsa.cmp_block);
    m.nsa.cmp_stride = n.value("cmp_stride", m.nsa.cmp_stride);
    m.nsa.sel_block = n.value("sel_block", m.nsa.sel_block);
    m.nsa.sel_count = n.value("sel_count", m.nsa.sel_count);
    m.nsa.window = n.value("window", m.nsa.window);
    m.nsa.phi = n.value("phi", m.nsa.phi);
  }
  return m;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
void get_opt(const json& j, const char* k, std::optional<double>& v) {
  if (j.contains(k) && !j.at(k).is_null()) v = j.at(k).get<double>(); else v.reset();
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
           {"train",
            {{"steps", c.train.steps},
             {"batch", c.train.batch},
             {"seq_len", c.train.seq_len},
             {"lr", c.train.lr},
             {"warmup_steps", c.train.warmup_steps},
             {"weight_decay", c.train.weight_decay},
             {"grad_clip", c.train.grad_clip},
             {"precision", c.train.precision},
             {"master_weights", c.train.master_weights},
             {"data", c.train.data},
             {"seed", c.train.seed},
             {"world_size", c.train.world_size}}},
           {"flags", c.flags},
           {"faults", c.faults},
           {"from_environment", c.from_environment},
           {"probes", probes},
           {"watchdog",
            {{"first_step_timeout_s", c.watchdog.first_step_timeout_s},
             {"stall_timeout_s", c.watchdog.stall_timeout_s},
             {"step_timeout_s", c.watchdog.step_timeout_s},
             {"slow_step_factor", c.watchdog.slow_step_factor}}},
           {"gates", c.gates},
           {"device", c.device},
           {"expect", c.expect ? *c.expect : json(nullptr)},
           {"observe_alternate", c.observe_alternate}};
}

void from_json(const json& j, CellSpec& c) {
  c.id = j.at("id").get<std::string>();
  c.axes.clear();
  for (auto& kv : j.value("axes", json::array())) c.axes.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  c.scenario_name = j.value("scenario_name", "");
  c.scenario_file = j.value("scenario_file", "");
  c.model_name = j.value("model_name", "");
  c.model = model_from_json(j.at("model"));
  const json& t = j.at("train");
  c.train.steps = t.value("steps", c.train.steps);
  c.train.batch = t.value("batch", c.train.batch);
  c.train.seq_len = t.value("seq_len", c.train.seq_len);
  c.train.lr = t.value("lr", c.train.lr);
  c.train.warmup_steps = t.value("warmup_steps", c.train.warmup_steps);
  c.train.weight_decay = t.value("weight_decay", c.train.weight_decay);
  c.train.grad_clip = t.value("grad_clip", c.train.grad_clip);
  c.train.precision = t.value("precision", c.train.precision);
  c.train.master_weights = t.value("master_weights", c.train.master_weights);
  c.train.data = t.value("data", c.train.data);
  c.train.seed = t.value("seed", c.train.seed);
  c.train.world_size = t.value("world_size", c.train.world_size);
  c.flags = j.value("flags", std::map<std::string, std::string>{});
  c.faults = j.value("faults", std::vector<std::string>{});
  c.from_environment = j.value("from_environment", std::vector<std::string>{});
  c.probes.clear();
  const json probes = j.value("probes", json::object());  // named: items() must not outlive its json
  for (auto& [name, p] : probes.items())
    c.probes[name] = ProbeSpec{p.value("enabled", true), p.value("every", 1), p.value("options", json::object())};
  const json& w = j.value("watchdog", json::object());
  c.watchdog.first_step_timeout_s = w.value("first_step_timeout_s", c.watchdog.first_step_timeout_s);
  c.watchdog.stall_timeout_s = w.value("stall_timeout_s", c.watchdog.stall_timeout_s);
  c.watchdog.step_timeout_s = w.value("step_timeout_s", c.watchdog.step_timeout_s);
  c.watchdog.slow_step_factor = w.value("slow_step_factor", c.watchdog.slow_step_factor);
  c.gates = j.value("gates", json::object()).get<GateSpec>();
  c.device = j.value("device", "auto");
  c.observe_alternate = j.value("observe_alternate", false);
  if (j.contains("expect") && !j.at("expect").is_null()) c.expect = j.at("expect"); else c.expect.reset();
}

}  // namespace harness
