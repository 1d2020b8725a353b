#pragma once
// Runs as plain values (nvbench's State/Summary idea): what a cell did and what
// the analysis concluded. Writers only render these; nothing here runs anything.
// JSON field names are the contract of DESIGN.md §6 (results.json). A record
// with a hand-written (de)serializer declares it inside itself (a friend that
// nlohmann's lookup finds) and results.cpp defines it; the plain ones use
// nlohmann's field-list macro.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/distributed.h"
#include "harness/core/outcome.h"
#include "harness/core/placement.h"
#include "harness/core/trace_summary.h"

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

  friend void to_json(nlohmann::json& j, const Finding& v);
  friend void from_json(const nlohmann::json& j, Finding& v);
};

// How a training step ran (nsa/step_graph.h): eagerly, capturing the CUDA
// graph of the step (set-up, like the first step: not timed), or replaying it.
enum class StepExec { eager, capture, replay };
NLOHMANN_JSON_SERIALIZE_ENUM(StepExec, {{StepExec::eager, "eager"}, {StepExec::capture, "capture"},
                                        {StepExec::replay, "replay"}})

// The cell's CUDA graph of the training step, as the child reported it.
struct CudaGraphRecord {
  int captured_at = 0;     // the step that captured it; 0: never captured
  int replays = 0;         // steps run as a replay (the capturing step included)
  int watched_steps = 0;   // steps a probe watched from inside, which ran eagerly
  std::string off_reason;  // why no step could replay ("" when graphs could run)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CudaGraphRecord, captured_at, replays, watched_steps, off_reason)

// Whether the cell's steps read 16-bit copies of the weights or cast each one
// (nsa::Model::keep_compute_copies), as the child reported it.
struct WeightCopiesRecord {
  int tensors = 0;         // weights read through copies; 0: each cast per step
  std::string off_reason;  // why not ("" when copies ran)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WeightCopiesRecord, tensors, off_reason)

struct StepRecord {
  int step = 0;
  double loss = 0.0;          // NaN allowed (written as null in JSON)
  double step_ms = 0.0;
  double tok_s = 0.0;
  bool skipped = false;       // fp16 loss-scale overflow skip
  int host_syncs = 0;
  double probe_ms = 0.0;      // observing outside the timed step (probe hooks, snapshots); 0 = none
  // Waiting for the step's batch and copying it to the device, outside the
  // timed step; unset in results written before the child reported it.
  std::optional<double> data_ms;
  std::optional<bool> observed;  // under `probes: alternate`: did the probes watch this step?
  std::optional<StepExec> exec;  // unset in results written before the child reported it

  friend void to_json(nlohmann::json& j, const StepRecord& v);
  friend void from_json(const nlohmann::json& j, StepRecord& v);
};

// Acceptance gates; unset = not checked. Each CellResult carries the limits it
// was judged against, so a report re-rendered from results.json judges alike.
struct GateSpec {
  std::optional<double> min_tok_s;
  std::optional<double> max_step_ms;       // compared with the median warm step, beyond its noise
  bool require_finite = true;
  bool require_loss_falls = false;
  std::optional<double> min_branch_share;  // every branch's mean gate share ≥ this, in every layer
  std::optional<double> max_branch_share;

  friend void to_json(nlohmann::json& j, const GateSpec& v);
  friend void from_json(const nlohmann::json& j, GateSpec& v);
};

// The gates probe's statistics of one layer at its last observed step: each
// branch's mean share of the gate mass (over tokens and heads), how much gates
// vary over positions, the saturated fraction, the mean gate, the fc2 norm.
// A value the probe could not measure (non-finite gates) is NaN: null in
// results.json, as the probe always wrote it.
struct LayerGateStats {
  int layer = -1;
  double share_cmp = 0.0, share_slc = 0.0, share_win = 0.0;
  double std_over_tokens = 0.0;
  double saturated_fraction = 0.0;
  double mean_gate = 0.0;
  double fc2_norm = 0.0;

  friend void to_json(nlohmann::json& j, const LayerGateStats& v);
  friend void from_json(const nlohmann::json& j, LayerGateStats& v);
};
struct GateStats {
  int step = 0;
  std::vector<LayerGateStats> layers;
};

// A branch's mean gate share, extremes over the layers: what the branch-share
// gates judge (analysis/gates.cpp).
struct BranchShare {
  double min = 0.0, max = 0.0;
  int min_layer = -1, max_layer = -1;
};
// "cmp", "slc", "win" → their extremes over the layers of `stats` (a
// non-finite share is no measurement; a branch with none has no entry).
std::map<std::string, BranchShare> branch_shares(const GateStats& stats);

// The noise a cell's step times carry: median and scaled MAD (1.4826·MAD, the
// standard deviation for normal noise, robust to the outliers it judges) of
// the warm steps (all but the first).
struct StepNoise {
  double median_ms = 0.0;
  double mad_ms = 0.0;
  int steps = 0;
};

// The one rule for a step-time limit (the max_step_ms gate): the typical step
// is over it beyond its own noise. One slow step never decides it.
inline bool median_over_limit(const StepNoise& n, double limit_ms) { return n.median_ms - n.mad_ms > limit_ms; }

// The machine's 1-minute load average when the cell started and ended, and
// its CPU count: the noise context of every timing.
struct MachineLoad {
  double start = 0.0, end = 0.0;
  int cpus = 0;
};
// More runnable tasks than CPUs (beyond half a CPU of slack for the harness)
// while the cell ran: other processes took CPU time from it, so an absolute
// step-time or throughput limit measured the machine, not the model.
inline bool machine_busy(const MachineLoad& l) { return l.cpus > 0 && std::max(l.start, l.end) > l.cpus + 0.5; }
// Another cell computed on the same GPU while this one ran (run --cells-per-gpu).
inline bool gpu_shared(int gpu_sharers) { return gpu_sharers > 1; }

// A timing finding re-run once to see whether it repeats (the deciding result
// is the re-run's when the finding did not repeat).
struct Confirmation {
  std::string first_reason;   // what the first run concluded
  std::string first_title;
  std::string rerun_reason;   // what the re-run concluded ("" = pass)
  bool repeated = false;
  std::string rerun_dir;      // relative to the run dir
};

// Each plain record below has one (de)serializer, generated from its field
// list; a key absent from the JSON keeps the field's default.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateStats, step, layers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StepNoise, median_ms, mad_ms, steps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MachineLoad, start, end, cpus)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Confirmation, first_reason, first_title, rerun_reason, repeated,
                                                rerun_dir)

// What one probe's step-end hook cost, as the observed child measured it (its
// "probe_costs" table, largest first): the report's Observation Cost section.
struct ProbeCost {
  std::string name;
  double median_ms = 0.0;
  int steps = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProbeCost, name, median_ms, steps)

// One re-run of a crashed cell (supervisor/crash_escalation.h): with
// CUDA_LAUNCH_BLOCKING=1, or under compute-sanitizer memcheck.
struct EscalationRecord {
  std::string attempt;  // "launch_blocking", "memcheck"
  std::string outcome;
  std::string reason;   // "" when the re-run passed
  std::string kernel;   // the kernel it names ("" = none)
  std::string detail;
  std::string dir;      // relative to the run dir
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EscalationRecord, attempt, outcome, reason, kernel, detail, dir)

// The flight recorder's account of a failed cell: how many kernels it saw
// launched, and the last few (readable names), oldest first.
struct KernelLaunch {
  std::string kernel;
  int step = -1;
  std::string nvtx;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelLaunch, kernel, step, nvtx)
struct FlightRecord {
  unsigned long long launches = 0;
  std::vector<KernelLaunch> last;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FlightRecord, launches, last)

struct CellMetrics {
  std::optional<double> tok_s;          // median over steps after warm-up
  std::optional<double> step_ms_median;
  std::optional<double> step_ms_max;
  std::optional<double> probe_ms_median;  // median probe_ms over the timed steps, when reported
  std::optional<double> data_ms_median;   // median data_ms over the timed steps, when reported
  std::optional<double> peak_mem_bytes;
  std::optional<double> first_loss;
  std::optional<double> last_loss;

  friend void to_json(nlohmann::json& j, const CellMetrics& v);
  friend void from_json(const nlohmann::json& j, CellMetrics& v);
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
  // Every setting that changes behaviour, as the child ran it: NSA_* flags
  // (scenario, matrix, include and environment), faults; `from_environment`
  // names the ones the environment supplied.
  std::map<std::string, std::string> flags;
  std::vector<std::string> faults;
  std::vector<std::string> from_environment;
  // Probes that ran on a sample of the steps (`every: N`, N > 1), by name:
  // observing changes with it (the steps between may replay the CUDA graph).
  std::map<std::string, int> sampled_probes;
  std::optional<GateSpec> gates;  // the limits it was judged against; unset: none checked
  std::optional<GateStats> gate_stats;  // the gates probe's last table, when it ran
  std::optional<TraceSummary> trace;    // the CUPTI probe's summary, when it traced
  std::optional<CudaGraphRecord> cuda_graph;  // unset: the child did not report one (older results)
  std::optional<WeightCopiesRecord> weight_copies;  // unset: not reported (older results)
  std::optional<StepNoise> step_noise;
  std::optional<MachineLoad> load;
  std::optional<Confirmation> confirmation;
  // Hash of the cell's effective spec as it ran (harness/run/spec_hash.h):
  // --resume reuses this result only while the cell's spec still hashes the same.
  std::string spec_hash;
  // The GPU(s) the supervisor gave the cell (its CUDA_VISIBLE_DEVICES). Empty:
  // none managed — a CPU cell, or a machine whose GPUs the harness did not list.
  std::vector<GpuDevice> gpus;
  // The most cells that held one of those GPUs at the same time while this one
  // ran, itself included (`run --cells-per-gpu`); 1: alone, 0: not managed.
  // Above 1 the cell's absolute timings measured the sharing, not the model.
  int gpu_sharers = 0;
  // world_size > 1: the ranks side by side (who is stuck, diverging, straggling).
  std::optional<DistributedFacts> distributed;
  std::vector<ProbeCost> probe_costs;
  std::vector<EscalationRecord> escalation;   // empty: the cell was not re-run
  std::optional<FlightRecord> flight_recorder;  // set for a failed cell whose recorder was read
  int malformed_event_lines = 0;               // events.jsonl lines that were not events
  // Probe tables that no stage reads (precision audit, routing, memory, …),
  // kept as the child wrote them for a person reading results.json. A table a
  // stage reads becomes a typed field above (gate_stats, trace, probe_costs).
  std::map<std::string, nlohmann::json> probe_tables;
  // Free-form notes shown as text (e.g. "result_write_error").
  nlohmann::json extra = nlohmann::json::object();

  friend void to_json(nlohmann::json& j, const CellResult& v);
  friend void from_json(const nlohmann::json& j, CellResult& v);
};

// "Flipping X turns fail into pass": one line of differential attribution.
struct Attribution {
  std::string axis;           // axis or flag name
  std::string failing_value;
  std::string passing_value;
  std::string statement;      // "NSA_PREFILL_BATCHED=1 bypasses the step-5 hang"
  std::vector<std::string> cells;  // ids that support it

  friend void to_json(nlohmann::json& j, const Attribution& v);
  friend void from_json(const nlohmann::json& j, Attribution& v);
};

struct GateCheck {
  std::string gate;           // "min_tok_s"
  std::string cell;
  std::string required;       // "≥ 300"
  std::string measured;
  bool met = false;
  // false: a timing gate measured on a machine too busy to judge it (the
  // measurement is the machine's, not the model's); never a failure, a warning.
  bool judged = true;

  friend void to_json(nlohmann::json& j, const GateCheck& v);
  friend void from_json(const nlohmann::json& j, GateCheck& v);
};

enum class Decision { go, conditional_go, no_go };
std::string_view to_string(Decision d);
int exit_code_for(Decision d);  // 0 GO, 3 CONDITIONAL GO, 1 NO-GO (DESIGN §5)

// How the run itself ended, apart from anything its cells showed. Only a
// complete run carries a verdict on the scenario; the others say what was not run.
// cells_missing: a merge of shards in which some cells are in no shard (a
// shard failed or never ran); those cells are listed in `not_run`.
enum class RunEnd { complete, cancelled, harness_failure, cells_missing };
std::string_view to_string(RunEnd e);

struct RunCompletion {
  RunEnd end = RunEnd::complete;
  std::string signal;                     // "SIGINT" / "SIGTERM" when cancelled by one
  std::string harness_failure;            // one-line cause when the harness itself failed
  std::vector<std::string> not_run;       // cells that never finished (or are missing from every shard): no verdict
  int reused = 0;                         // --resume: earlier results taken as they were
  std::vector<std::string> rerun_changed; // --resume: cells re-run because their spec changed
};

// results.json's `schema_version`: raised when a field is removed or changes
// meaning (adding an optional field does not raise it). docs/results.schema.json
// documents this version; a reader refuses a file newer than it knows.
inline constexpr int kResultsSchemaVersion = 1;

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
  RunCompletion completion;
  std::optional<ShardInfo> shard;          // set when this run is one slice of the matrix (run --shard)
  std::vector<MergeSource> merged_from;    // set when this run was merged from shards

  friend void to_json(nlohmann::json& j, const RunResult& v);
  friend void from_json(const nlohmann::json& j, RunResult& v);
};

}  // namespace harness
