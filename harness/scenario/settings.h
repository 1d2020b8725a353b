#pragma once
// The pieces the scenario parser passes between its stages: a cell being
// built (its CellSpec plus where each checked setting was decided, so a
// cross-setting problem points at the line that caused it) and a cache of
// named model configs.
#include <map>
#include <optional>
#include <string>

#include "harness/core/cell_spec.h"
#include "harness/scenario/yaml_tree.h"

namespace harness {

// Where a setting got its value: the node's position and its key path.
struct Origin {
  Pos pos;
  std::string path;
};

struct CellDraft {
  CellSpec spec;
  // Keys: "train.seq_len", "train.precision", "train.master_weights", "device",
  // "model", "flags.<NAME>". Absent = the built-in default.
  std::map<std::string, Origin> origins;
};

// Loads named model configs once each (several cells and axes name the same one).
class ModelLibrary {
 public:
  explicit ModelLibrary(std::string configs_dir) : dir_(std::move(configs_dir)) {}
  // The config, or nothing with `error` set to a message naming close matches.
  std::optional<nsa::ModelConfig> get(const std::string& name, std::string& error);
  std::vector<std::string> names() const;

 private:
  std::string dir_;
  std::map<std::string, nsa::ModelConfig> loaded_;
};

// The probe names of DESIGN §4, in report order.
const std::vector<std::string>& probe_names();
// A probe's settings when the file names it without `every` (`true`, or a
// mapping of options only): every step, except the checksum probe's sampling.
ProbeSpec default_probe(const std::string& name);
inline constexpr int kChecksumEveryDefault = 10;
std::map<std::string, ProbeSpec> default_probes();

}  // namespace harness
