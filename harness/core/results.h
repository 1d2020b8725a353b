#pragma once
// Runs as plain values (nvbench's State/Summary idea): what a cell did and what
// the analysis concluded. Writers only render these; nothing here runs anything.
// JSON field names are the contract of DESIGN.md §6 (results.json).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/outcome.h"

namespace harness {

// Ordered (axis, value) pairs: the cell id is built from them in this order.
using AxisValues = std::vector<std::pair<std::string, std::string>>;

// One diagnosis with its evidence. `code` is a reason code (outcome.h).
struct Finding {
  std::string code;
  Severity severity = Severity::warning;
  std::string title;      // one line, e.g. "non-finite loss at step 2"
  std::string detail;     // a paragraph: what was seen, what it means
  std::optional<int> step;
  std::string location;   // "layer 1 / slc / softmax", "kernel nsa_window_fwd", "phase forward/layer 0"
  nlohmann::json evidence = nlohmann::json::object();  // raw facts: values, stack, kernel list, paths
};

struct StepRecord {
  int step = 0;
  double loss = 0.0;          // NaN allowed (written as null in JSON)
  double step_ms = 0.0;
  double tok_s = 0.0;
  bool skipped = false;       // fp16 loss-scale overflow skip
  int host_syncs = 0;
  double probe_ms = 0.0;      // observing outside the timed step (probe hooks, snapshots); 0 = none
  std::optional<bool> observed;  // under `probes: alternate`: did the probes watch this step?
};

struct CellMetrics {
  std::optional<double> tok_s;          // median over steps after warm-up
  std::optional<double> step_ms_median;
  std::optional<double> step_ms_max;
  std::optional<double> probe_ms_median;  // median probe_ms over the timed steps, when reported
  std::optional<double> peak_mem_bytes;
  std::optional<double> first_loss;
  std::optional<double> last_loss;
};

struct CellResult {
  std::string id;
  AxisValues axes;
  Outcome outcome = Outcome::pass;
  std::optional<std::string> reason;    // null for a clean pass
  int steps_completed = 0;
  int steps_planned = 0;
  CellMetrics metrics;
  std::vector<StepRecord> steps;
  std::vector<Finding> findings;
  std::optional<nlohmann::json> expect;  // from the scenario, when given
  std::optional<bool> expect_met;
  std::string repro_command;
  std::vector<std::string> artifacts;    // paths relative to the run dir
  double wall_s = 0.0;
  std::optional<int> exit_code;
  std::optional<int> term_signal;
  nlohmann::json extra = nlohmann::json::object();  // probe tables (kernels, gates, precision audit, …)
};

// "Flipping X turns fail into pass": one line of differential attribution.
struct Attribution {
  std::string axis;           // axis or flag name
  std::string failing_value;
  std::string passing_value;
  std::string statement;      // "NSA_PREFILL_BATCHED=1 bypasses the step-5 hang"
  std::vector<std::string> cells;  // ids that support it
};

struct GateCheck {
  std::string gate;           // "min_tok_s"
  std::string cell;
  std::string required;       // "≥ 300"
  std::string measured;
  bool met = false;
};

enum class Decision { go, conditional_go, no_go };
std::string_view to_string(Decision d);
int exit_code_for(Decision d);  // 0 GO, 3 CONDITIONAL GO, 1 NO-GO (DESIGN §5)

struct RunResult {
  nlohmann::json scenario;    // name, file, hash, description
  nlohmann::json platform;    // gpu, sm, driver, cuda, libtorch, git, host, date
  Decision decision = Decision::go;
  std::string summary;        // executive summary, written from the findings
  std::vector<CellResult> cells;
  std::vector<Attribution> attributions;
  std::vector<GateCheck> gates;
  std::vector<std::string> next_actions;
  std::string started_at;
  double wall_s = 0.0;
  std::string command_line;
};

void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);
void to_json(nlohmann::json& j, const StepRecord& s);
void from_json(const nlohmann::json& j, StepRecord& s);
void to_json(nlohmann::json& j, const CellMetrics& m);
void from_json(const nlohmann::json& j, CellMetrics& m);
void to_json(nlohmann::json& j, const CellResult& c);
void from_json(const nlohmann::json& j, CellResult& c);
void to_json(nlohmann::json& j, const Attribution& a);
void from_json(const nlohmann::json& j, Attribution& a);
void to_json(nlohmann::json& j, const GateCheck& g);
void from_json(const nlohmann::json& j, GateCheck& g);
void to_json(nlohmann::json& j, const RunResult& r);
void from_json(const nlohmann::json& j, RunResult& r);

}  // namespace harness
