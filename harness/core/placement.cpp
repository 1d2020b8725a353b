#include "harness/core/placement.h"

namespace harness {
using nlohmann::json;

void to_json(json& j, const GpuDevice& g) { j = json{{"index", g.index}, {"uuid", g.uuid}, {"name", g.name}}; }
void from_json(const json& j, GpuDevice& g) {
  g.index = j.value("index", -1);
  g.uuid = j.value("uuid", "");
  g.name = j.value("name", "");
}

void to_json(json& j, const ShardInfo& s) {
  j = json{{"index", s.index},
           {"count", s.count},
           {"matrix_cells", s.matrix_cells},
           {"scenario_hash", s.scenario_hash},
           {"revision", s.revision}};
}
void from_json(const json& j, ShardInfo& s) {
  s.index = j.at("index").get<int>();
  s.count = j.at("count").get<int>();
  s.matrix_cells = j.value("matrix_cells", std::vector<std::string>{});
  s.scenario_hash = j.value("scenario_hash", "");
  s.revision = j.value("revision", "");
}

void to_json(json& j, const MergeSource& m) {
  j = json{{"shard_index", m.shard_index}, {"dir", m.dir}, {"cells", m.cells}};
}
void from_json(const json& j, MergeSource& m) {
  m.shard_index = j.value("shard_index", 0);
  m.dir = j.value("dir", "");
  m.cells = j.value("cells", 0);
}

}  // namespace harness
