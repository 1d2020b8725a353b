#include "harness/core/results.h"

#include "harness/core/enum_names.h"

#include <cmath>
#include <stdexcept>

namespace harness {
using nlohmann::json;

namespace {
// JSON has no NaN/Inf: non-finite numbers travel as strings so "loss was NaN"
// survives a round trip instead of becoming null.
json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
double number_from(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    auto s = j.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  if (j.is_null()) return std::nan("");
  throw std::runtime_error("expected a number, got " + j.dump());
}
template <class T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = number(*v); else j[key] = nullptr;
}
void get_opt(const json& j, const char* key, std::optional<double>& v) {
  if (j.contains(key) && !j.at(key).is_null()) v = number_from(j.at(key)); else v.reset();
}
template <class T>
void read_opt(const json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j.at(key).is_null()) v = j.at(key).get<T>(); else v.reset();
}
// A typed field, or (results.json written before it was one) the same record
// under `extra`, moved out of it so a re-written file carries it once.
template <class T>
T typed_or_extra(const json& j, json& extra, const char* key, T fallback, const char* extra_key = nullptr) {
  if (j.contains(key)) return j.at(key).get<T>();
  auto it = extra.find(extra_key ? extra_key : key);
  if (it == extra.end()) return fallback;
  T v = it->template get<T>();
  extra.erase(it);
  return v;
}
template <class T>
std::optional<T> typed_or_extra_opt(const json& j, json& extra, const char* key, const char* extra_key) {
  if (!j.contains(key) && !(extra.contains(extra_key) && extra.at(extra_key).is_object())) return std::nullopt;
  return typed_or_extra(j, extra, key, T{}, extra_key);
}
// Before probe tables had their own field they sat in `extra` beside the notes;
// the notes are text, the tables are objects or arrays.
std::map<std::string, json> probe_tables_from(const json& j, json& extra) {
  auto tables = j.value("probe_tables", std::map<std::string, json>{});
  for (auto it = extra.begin(); it != extra.end();) {
    if (!it->is_structured()) { ++it; continue; }
    tables.emplace(it.key(), *it);
    it = extra.erase(it);
  }
  return tables;
}
}  // namespace

namespace {
constexpr EnumName<Decision> kDecisions[] = {
    {Decision::go, "GO"}, {Decision::conditional_go, "CONDITIONAL GO"}, {Decision::no_go, "NO-GO"}};
constexpr EnumName<RunEnd> kRunEnds[] = {{RunEnd::complete, "complete"}, {RunEnd::cancelled, "cancelled"},
                                         {RunEnd::harness_failure, "harness_failure"},
                                         {RunEnd::cells_missing, "cells_missing"}};
}  // namespace

std::string_view to_string(Decision d) { return name_in(kDecisions, d, "NO-GO"); }
std::string_view to_string(RunEnd e) { return name_in(kRunEnds, e, "complete"); }

int exit_code_for(Decision d) {
  switch (d) {
    case Decision::go: return 0;
    case Decision::conditional_go: return 3;
    case Decision::no_go: return 1;
  }
  return 1;
}

void to_json(json& j, const Finding& f) {
  j = json{{"code", f.code}, {"severity", to_string(f.severity)}, {"title", f.title},
           {"detail", f.detail}, {"location", f.location}, {"evidence", f.evidence}};
  if (f.step) j["step"] = *f.step; else j["step"] = nullptr;
}
void from_json(const json& j, Finding& f) {
  f.code = j.at("code").get<std::string>();
  f.severity = severity_from_string(j.value("severity", "warning")).value_or(Severity::warning);
  f.title = j.value("title", "");
  f.detail = j.value("detail", "");
  f.location = j.value("location", "");
  f.evidence = j.value("evidence", json::object());
  if (j.contains("step") && !j.at("step").is_null()) f.step = j.at("step").get<int>(); else f.step.reset();
}

void to_json(json& j, const StepRecord& s) {
  j = json{{"step", s.step}, {"loss", number(s.loss)}, {"step_ms", number(s.step_ms)},
           {"tok_s", number(s.tok_s)}, {"skipped", s.skipped}, {"host_syncs", s.host_syncs}};
  if (s.probe_ms > 0) j["probe_ms"] = number(s.probe_ms);
  if (s.data_ms) j["data_ms"] = number(*s.data_ms);
  if (s.observed) j["observed"] = *s.observed;
  if (s.exec) j["exec"] = *s.exec;
}
void from_json(const json& j, StepRecord& s) {
  s.step = j.at("step").get<int>();
  s.loss = number_from(j.value("loss", json()));
  s.step_ms = number_from(j.value("step_ms", json(0.0)));
  s.tok_s = number_from(j.value("tok_s", json(0.0)));
  s.skipped = j.value("skipped", false);
  s.host_syncs = j.value("host_syncs", 0);
  s.probe_ms = number_from(j.value("probe_ms", json(0.0)));
  get_opt(j, "data_ms", s.data_ms);
  if (j.contains("observed") && j.at("observed").is_boolean()) s.observed = j.at("observed").get<bool>();
  else s.observed.reset();
  read_opt(j, "exec", s.exec);
}

// The metrics' fields, listed once for writing and reading.
template <class M, class Visit>
void visit_metrics(M& m, Visit&& visit) {
  visit("tok_s", m.tok_s); visit("step_ms_median", m.step_ms_median); visit("step_ms_max", m.step_ms_max);
  visit("probe_ms_median", m.probe_ms_median); visit("data_ms_median", m.data_ms_median);
  visit("peak_mem_bytes", m.peak_mem_bytes);
  visit("first_loss", m.first_loss); visit("last_loss", m.last_loss);
}
void to_json(json& j, const CellMetrics& m) {
  j = json::object();
  visit_metrics(m, [&j](const char* key, const std::optional<double>& v) { put_opt(j, key, v); });
}
void from_json(const json& j, CellMetrics& m) {
  visit_metrics(m, [&j](const char* key, std::optional<double>& v) { get_opt(j, key, v); });
}

namespace {
json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
void opt_from(const json& j, const char* key, std::optional<double>& v) {
  if (j.contains(key) && j.at(key).is_number()) v = j.at(key).get<double>(); else v.reset();
}
}  // namespace

void to_json(json& j, const GateSpec& g) {
  j = json{{"min_tok_s", opt_json(g.min_tok_s)},
           {"max_step_ms", opt_json(g.max_step_ms)},
           {"require_finite", g.require_finite},
           {"require_loss_falls", g.require_loss_falls},
           {"min_branch_share", opt_json(g.min_branch_share)},
           {"max_branch_share", opt_json(g.max_branch_share)}};
}
void from_json(const json& j, GateSpec& g) {
  opt_from(j, "min_tok_s", g.min_tok_s);
  opt_from(j, "max_step_ms", g.max_step_ms);
  g.require_finite = j.value("require_finite", true);
  g.require_loss_falls = j.value("require_loss_falls", false);
  opt_from(j, "min_branch_share", g.min_branch_share);
  opt_from(j, "max_branch_share", g.max_branch_share);
}

void to_json(json& j, const CellResult& c) {
  json axes = json::object();
  for (auto& [k, v] : c.axes) axes[k] = v;
  json order = json::array();
  for (auto& kv : c.axes) order.push_back(kv.first);
  j = json{{"id", c.id},
           {"axes", axes},
           {"axis_order", order},
           {"outcome", to_string(c.outcome)},
           {"reason", c.reason ? json(*c.reason) : json(nullptr)},
           {"steps_completed", c.steps_completed},
           {"steps_planned", c.steps_planned},
           {"metrics", c.metrics},
           {"steps", c.steps},
           {"findings", c.findings},
           {"repro_command", c.repro_command},
           {"artifacts", c.artifacts},
           {"wall_s", c.wall_s},
           {"exit_code", c.exit_code ? json(*c.exit_code) : json(nullptr)},
           {"term_signal", c.term_signal ? json(*c.term_signal) : json(nullptr)},
           {"flags", c.flags},
           {"faults", c.faults},
           {"from_environment", c.from_environment},
           {"extra", c.extra}};
  if (!c.spec_hash.empty()) j["spec_hash"] = c.spec_hash;
  if (!c.gpus.empty()) j["gpus"] = c.gpus;
  if (c.gpu_sharers > 0) j["gpu_sharers"] = c.gpu_sharers;
  if (c.distributed) j["distributed"] = *c.distributed;
  if (c.gates) j["gates_spec"] = *c.gates;
  if (c.gate_stats) j["gate_stats"] = *c.gate_stats;
  if (c.trace) j["trace"] = *c.trace;
  if (c.cuda_graph) j["cuda_graph"] = *c.cuda_graph;
  if (c.weight_copies) j["weight_copies"] = *c.weight_copies;
  if (!c.sampled_probes.empty()) j["sampled_probes"] = c.sampled_probes;
  if (!c.probe_tables.empty()) j["probe_tables"] = c.probe_tables;
  if (c.step_noise) j["step_noise"] = *c.step_noise;
  if (c.load) j["load"] = *c.load;
  if (c.confirmation) j["confirmation"] = *c.confirmation;
  if (!c.probe_costs.empty()) j["probe_costs"] = c.probe_costs;
  if (!c.escalation.empty()) j["escalation"] = c.escalation;
  if (c.flight_recorder) j["flight_recorder"] = *c.flight_recorder;
  if (c.malformed_event_lines > 0) j["malformed_event_lines"] = c.malformed_event_lines;
  if (c.expect) {
    j["expect"] = *c.expect;
    j["expect_met"] = c.expect_met ? json(*c.expect_met) : json(nullptr);
  }
}
void from_json(const json& j, CellResult& c) {
  c.id = j.at("id").get<std::string>();
  c.axes.clear();
  const json& axes = j.value("axes", json::object());
  if (j.contains("axis_order")) {
    for (auto& k : j.at("axis_order")) {
      auto key = k.get<std::string>();
      c.axes.emplace_back(key, axes.at(key).get<std::string>());
    }
  } else {
    for (auto& [k, v] : axes.items()) c.axes.emplace_back(k, v.get<std::string>());
  }
  auto o = outcome_from_string(j.at("outcome").get<std::string>());
  if (!o) throw std::runtime_error("unknown outcome '" + j.at("outcome").get<std::string>() + "'");
  c.outcome = *o;
  if (j.contains("reason") && !j.at("reason").is_null()) c.reason = j.at("reason").get<std::string>();
  c.steps_completed = j.value("steps_completed", 0);
  c.steps_planned = j.value("steps_planned", 0);
  c.metrics = j.value("metrics", CellMetrics{});
  c.steps = j.value("steps", std::vector<StepRecord>{});
  c.findings = j.value("findings", std::vector<Finding>{});
  c.repro_command = j.value("repro_command", "");
  c.artifacts = j.value("artifacts", std::vector<std::string>{});
  c.wall_s = j.value("wall_s", 0.0);
  if (j.contains("exit_code") && !j.at("exit_code").is_null()) c.exit_code = j.at("exit_code").get<int>();
  if (j.contains("term_signal") && !j.at("term_signal").is_null()) c.term_signal = j.at("term_signal").get<int>();
  c.extra = j.value("extra", json::object());
  c.spec_hash = j.value("spec_hash", "");
  c.gpus = j.value("gpus", std::vector<GpuDevice>{});
  c.gpu_sharers = j.value("gpu_sharers", 0);
  if (j.contains("distributed") && j["distributed"].is_object()) c.distributed = j["distributed"].get<DistributedFacts>();
  c.flags = j.value("flags", std::map<std::string, std::string>{});
  c.faults = j.value("faults", std::vector<std::string>{});
  c.from_environment = j.value("from_environment", std::vector<std::string>{});
  read_opt(j, "step_noise", c.step_noise);
  read_opt(j, "cuda_graph", c.cuda_graph);
  read_opt(j, "weight_copies", c.weight_copies);
  c.sampled_probes = j.value("sampled_probes", std::map<std::string, int>{});
  read_opt(j, "load", c.load);
  read_opt(j, "confirmation", c.confirmation);
  // Records that results.json kept under `extra` before they had fields; each
  // is moved out of it, so a re-written file carries it once.
  c.probe_costs = typed_or_extra(j, c.extra, "probe_costs", std::vector<ProbeCost>{});
  c.escalation = typed_or_extra(j, c.extra, "escalation", std::vector<EscalationRecord>{});
  c.flight_recorder = typed_or_extra_opt<FlightRecord>(j, c.extra, "flight_recorder", "flight_recorder");
  c.malformed_event_lines = typed_or_extra(j, c.extra, "malformed_event_lines", 0);
  c.gates = typed_or_extra_opt<GateSpec>(j, c.extra, "gates_spec", "gates_spec");
  // The gates probe's table was extra.gates ("branch_shares" beside it was
  // derived from it, and is again: branch_shares()); the trace was extra.trace.
  c.gate_stats = typed_or_extra_opt<GateStats>(j, c.extra, "gate_stats", "gates");
  c.trace = typed_or_extra_opt<TraceSummary>(j, c.extra, "trace", "trace");
  c.probe_tables = probe_tables_from(j, c.extra);
  if (j.contains("expect") && !j.at("expect").is_null()) c.expect = j.at("expect");
  if (j.contains("expect_met") && !j.at("expect_met").is_null()) c.expect_met = j.at("expect_met").get<bool>();
}

// A layer's statistics, listed once for writing and reading.
template <class G, class Visit>
void visit_layer_gates(G& g, Visit&& visit) {
  visit("share_cmp", g.share_cmp), visit("share_slc", g.share_slc), visit("share_win", g.share_win);
  visit("std_over_tokens", g.std_over_tokens), visit("saturated_fraction", g.saturated_fraction);
  visit("mean_gate", g.mean_gate), visit("fc2_norm", g.fc2_norm);
}
void to_json(json& j, const LayerGateStats& g) {
  j = json{{"layer", g.layer}};
  visit_layer_gates(g, [&j](const char* key, double v) { j[key] = v; });  // NaN → null
}
void from_json(const json& j, LayerGateStats& g) {
  g.layer = j.value("layer", -1);
  visit_layer_gates(g, [&j](const char* key, double& v) { v = number_from(j.value(key, json())); });
}

std::map<std::string, BranchShare> branch_shares(const GateStats& stats) {
  std::map<std::string, BranchShare> out;
  for (const auto& row : stats.layers) {
    const std::pair<const char*, double> shares[] = {
        {"cmp", row.share_cmp}, {"slc", row.share_slc}, {"win", row.share_win}};
    for (auto [b, x] : shares) {
      if (!std::isfinite(x)) continue;
      auto [e, fresh] = out.try_emplace(b, BranchShare{x, x, row.layer, row.layer});
      if (fresh) continue;
      if (x < e->second.min) e->second.min = x, e->second.min_layer = row.layer;
      if (x > e->second.max) e->second.max = x, e->second.max_layer = row.layer;
    }
  }
  return out;
}

void to_json(json& j, const Attribution& a) {
  j = json{{"axis", a.axis}, {"failing_value", a.failing_value}, {"passing_value", a.passing_value},
           {"statement", a.statement}, {"cells", a.cells}};
}
void from_json(const json& j, Attribution& a) {
  a.axis = j.at("axis").get<std::string>();
  a.failing_value = j.value("failing_value", "");
  a.passing_value = j.value("passing_value", "");
  a.statement = j.value("statement", "");
  a.cells = j.value("cells", std::vector<std::string>{});
}

void to_json(json& j, const GateCheck& g) {
  j = json{{"gate", g.gate}, {"cell", g.cell}, {"required", g.required}, {"measured", g.measured}, {"met", g.met}};
  if (!g.judged) j["judged"] = false;
}
void from_json(const json& j, GateCheck& g) {
  g.gate = j.at("gate").get<std::string>();
  g.cell = j.value("cell", "");
  g.required = j.value("required", "");
  g.measured = j.value("measured", "");
  g.met = j.value("met", false);
  g.judged = j.value("judged", true);
}

void to_json(json& j, const RunResult& r) {
  j = json{{"schema_version", kResultsSchemaVersion},
           {"scenario", r.scenario},   {"platform", r.platform},
           {"decision", to_string(r.decision)}, {"summary", r.summary},
           {"cells", r.cells},         {"attributions", r.attributions},
           {"gates", r.gates},         {"next_actions", r.next_actions},
           {"started_at", r.started_at}, {"wall_s", r.wall_s},
           {"command_line", r.command_line}};
  const RunCompletion& k = r.completion;
  j["run_status"] = to_string(k.end);
  j["cancelled"] = k.end == RunEnd::cancelled;
  if (!k.signal.empty()) j["cancel_signal"] = k.signal;
  if (!k.harness_failure.empty()) j["harness_failure"] = k.harness_failure;
  j["not_run"] = k.not_run;
  j["resume"] = {{"reused", k.reused}, {"rerun_changed", k.rerun_changed}};
  if (r.shard) j["shard"] = *r.shard;
  if (!r.merged_from.empty()) j["merged_from"] = r.merged_from;
}
void from_json(const json& j, RunResult& r) {
  // Files written before the field are version 0: every field they have still means what it meant.
  const int version = j.value("schema_version", 0);
  if (version > kResultsSchemaVersion)
    throw std::runtime_error("results.json schema_version " + std::to_string(version) + " is newer than this build reads (" +
                             std::to_string(kResultsSchemaVersion) + "): use a newer nsa-harness");
  r.scenario = j.value("scenario", json::object());
  r.platform = j.value("platform", json::object());
  auto d = j.at("decision").get<std::string>();
  if (d == "GO") r.decision = Decision::go;
  else if (d == "CONDITIONAL GO") r.decision = Decision::conditional_go;
  else if (d == "NO-GO") r.decision = Decision::no_go;
  else throw std::runtime_error("unknown decision '" + d + "'");
  r.summary = j.value("summary", "");
  r.cells = j.value("cells", std::vector<CellResult>{});
  r.attributions = j.value("attributions", std::vector<Attribution>{});
  r.gates = j.value("gates", std::vector<GateCheck>{});
  r.next_actions = j.value("next_actions", std::vector<std::string>{});
  r.started_at = j.value("started_at", "");
  r.wall_s = j.value("wall_s", 0.0);
  r.command_line = j.value("command_line", "");
  // results.json written before these fields describes a complete run.
  const std::string end = j.value("run_status", "complete");
  auto run_end = value_in(kRunEnds, end);
  if (!run_end) throw std::runtime_error("unknown run_status '" + end + "'");
  r.completion.end = *run_end;
  r.completion.signal = j.value("cancel_signal", "");
  r.completion.harness_failure = j.value("harness_failure", "");
  r.completion.not_run = j.value("not_run", std::vector<std::string>{});
  if (j.contains("resume") && j.at("resume").is_object()) {
    r.completion.reused = j.at("resume").value("reused", 0);
    r.completion.rerun_changed = j.at("resume").value("rerun_changed", std::vector<std::string>{});
  }
  if (j.contains("shard") && j.at("shard").is_object()) r.shard = j.at("shard").get<ShardInfo>();
  r.merged_from = j.value("merged_from", std::vector<MergeSource>{});
}

}  // namespace harness
