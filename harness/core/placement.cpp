#include "harness/core/placement.h"

namespace harness {
using nlohmann::json;

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

}  // namespace harness
