#pragma once
// One cell of a matrix, fully resolved: everything the child process needs to
// run it, nothing it has to look up. The supervisor writes it to
// <cell dir>/cell.json; `nsa-harness cell --spec that/cell.json` reads it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/results.h"
#include "nsa/config.h"

namespace harness {

struct TrainSpec {
  int steps = 8;
  int batch = 2;
  int seq_len = 128;
  double lr = 3e-3;
  int warmup_steps = 2;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  std::string precision = "fp32";  // fp32 | bf16 | fp16
  bool master_weights = true;      // false: pure 16-bit params and optimizer state (as the seeds trained)
  std::string data = "synthetic";  // synthetic | bytes:<file>
  unsigned long long seed = 1234;
  // Ranks of a data-parallel run (one child process each); `batch` is the
  // global batch, split evenly over them.
  int world_size = 1;
  // Bitwise-reproducible runs: ATen's deterministic algorithms and a fixed
  // cuBLAS workspace (nsa/determinism.h). Off by default: on CUDA
  // the model's backward then differs run to run from step 2 on (two runs of
  // production_125m on one H200 parted there by ~1e-5), so a repro reruns the
  // settings, not the bits.
  bool deterministic = false;
};

// Which probes run and how often (every N steps). Names are the probe registry's.
// `enabled` decides whether a probe runs. A probe the file switched off with
// `false` has every 0; one switched off by the `probes` axis (or written
// `enabled: false`) keeps the every and options it would have run with.
struct ProbeSpec {
  bool enabled = true;
  int every = 1;
  nlohmann::json options = nlohmann::json::object();
};

struct WatchdogSpec {
  double first_step_timeout_s = 120;  // start → first step_end (includes model build, CUDA init)
  double stall_timeout_s = 30;        // no event at all
  double step_timeout_s = 120;        // one step, while events still flow
  double slow_step_factor = 5.0;      // a step over factor × median of the others is slow
};

// GateSpec (acceptance gates) lives in results.h: each cell result carries its own.

struct CellSpec {
  std::string id;                  // "prefill=sequential,precision=fp16"
  AxisValues axes;
  std::string scenario_name;
  std::string scenario_file;
  std::string model_name;          // config name, or "inline"
  nsa::ModelConfig model;
  TrainSpec train;
  std::map<std::string, std::string> flags;  // NSA_* → value, already validated
  std::vector<std::string> faults;
  // Names of the settings above that came from the environment (NSA_*), so a
  // report and a repro can say where each came from.
  std::vector<std::string> from_environment;
  std::map<std::string, ProbeSpec> probes;   // probe name → settings
  WatchdogSpec watchdog;
  GateSpec gates;
  std::string device = "auto";     // cpu | cuda | auto
  std::optional<nlohmann::json> expect;  // {outcome, reason?, step?, location?}
  // The `probes: alternate` axis value: the probes watch even steps only and
  // odd steps run unobserved, in the same process, so what observing costs is
  // measured step against step rather than process against process.
  bool observe_alternate = false;
};

void to_json(nlohmann::json& j, const CellSpec& c);
void from_json(const nlohmann::json& j, CellSpec& c);

}  // namespace harness
