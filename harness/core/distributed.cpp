#include "harness/core/distributed.h"

namespace harness {
using nlohmann::json;

namespace {
template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? json(*v) : json(nullptr);
}
template <class T>
void get(const json& j, const char* key, std::optional<T>& v) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) v.reset();
  else v = it->get<T>();
}
}  // namespace

void to_json(json& j, const CollectiveRef& c) {
  j = json{{"seq", c.seq}, {"op", c.op}, {"step", c.step}, {"bucket", c.bucket}};
}
void from_json(const json& j, CollectiveRef& c) {
  c.seq = j.value("seq", int64_t{0});
  c.op = j.value("op", "");
  c.step = j.value("step", 0);
  c.bucket = j.value("bucket", 0);
}

static void to_json(json& j, const RankFacts& r) {
  j = json{{"rank", r.rank}, {"outcome", r.outcome}, {"device", r.device}, {"steps_completed", r.steps_completed},
           {"last_completed_seq", r.last_completed_seq}, {"phase", r.phase}};
  put(j, "step_ms_median", r.step_ms_median);
  put(j, "compute_ms_median", r.compute_ms_median);
  put(j, "comm_ms_median", r.comm_ms_median);
  put(j, "pending", r.pending);
  put(j, "last_heartbeat_s", r.last_heartbeat_s);
}
static void from_json(const json& j, RankFacts& r) {
  r.rank = j.value("rank", 0);
  r.outcome = j.value("outcome", "");
  r.device = j.value("device", "");
  r.steps_completed = j.value("steps_completed", 0);
  r.last_completed_seq = j.value("last_completed_seq", int64_t{0});
  r.phase = j.value("phase", "");
  get(j, "step_ms_median", r.step_ms_median);
  get(j, "compute_ms_median", r.compute_ms_median);
  get(j, "comm_ms_median", r.comm_ms_median);
  get(j, "pending", r.pending);
  get(j, "last_heartbeat_s", r.last_heartbeat_s);
}

static void to_json(json& j, const CollectiveStall& s) {
  j = json{{"kind", s.kind}, {"rank", s.rank}, {"collective", s.collective}, {"waiting_ranks", s.waiting_ranks}};
  put(j, "rank_issued", s.rank_issued);
  put(j, "waiting_in", s.waiting_in);
  put(j, "rank_last_step", s.rank_last_step);
}
static void from_json(const json& j, CollectiveStall& s) {
  s.kind = j.value("kind", "");
  s.rank = j.value("rank", -1);
  s.collective = j.value("collective", CollectiveRef{});
  s.waiting_ranks = j.value("waiting_ranks", std::vector<int>{});
  get(j, "rank_issued", s.rank_issued);
  get(j, "waiting_in", s.waiting_in);
  get(j, "rank_last_step", s.rank_last_step);
}

static void to_json(json& j, const RankDesync& d) {
  j = json{{"rank", d.rank},           {"diverging_ranks", d.diverging_ranks}, {"first_step", d.first_step},
           {"last_agreeing_step", d.last_agreeing_step},
           {"reference_ranks", d.reference_ranks}, {"rank_sum", d.rank_sum}, {"reference_sum", d.reference_sum}};
}
static void from_json(const json& j, RankDesync& d) {
  d.rank = j.value("rank", -1);
  d.diverging_ranks = j.value("diverging_ranks", std::vector<int>{});
  d.first_step = j.value("first_step", 0);
  // Results written before checksums were sampled had one every step.
  d.last_agreeing_step = j.value("last_agreeing_step", d.first_step - 1);
  d.reference_ranks = j.value("reference_ranks", std::vector<int>{});
  d.rank_sum = j.value("rank_sum", 0.0);
  d.reference_sum = j.value("reference_sum", 0.0);
}

static void to_json(json& j, const Straggler& s) {
  j = json{{"rank", s.rank}, {"compute_ms_median", s.compute_ms_median}, {"others_median_ms", s.others_median_ms},
           {"others_noise_ms", s.others_noise_ms}, {"factor", s.factor}};
}
static void from_json(const json& j, Straggler& s) {
  s.rank = j.value("rank", -1);
  s.compute_ms_median = j.value("compute_ms_median", 0.0);
  s.others_median_ms = j.value("others_median_ms", 0.0);
  s.others_noise_ms = j.value("others_noise_ms", 0.0);
  s.factor = j.value("factor", 0.0);
}

void to_json(json& j, const DistributedFacts& d) {
  json ranks = json::array(), stragglers = json::array();
  for (auto& r : d.ranks) { json x; to_json(x, r); ranks.push_back(x); }
  for (auto& s : d.stragglers) { json x; to_json(x, s); stragglers.push_back(x); }
  j = json{{"world_size", d.world_size}, {"backend", d.backend}, {"ranks", ranks}, {"stragglers", stragglers}};
  if (d.stall) { json x; to_json(x, *d.stall); j["stall"] = x; } else j["stall"] = nullptr;
  if (d.desync) { json x; to_json(x, *d.desync); j["desync"] = x; } else j["desync"] = nullptr;
}
void from_json(const json& j, DistributedFacts& d) {
  d.world_size = j.value("world_size", 1);
  d.backend = j.value("backend", "");
  d.ranks.clear();
  for (auto& x : j.value("ranks", json::array())) { RankFacts r; from_json(x, r); d.ranks.push_back(r); }
  d.stragglers.clear();
  for (auto& x : j.value("stragglers", json::array())) { Straggler s; from_json(x, s); d.stragglers.push_back(s); }
  d.stall.reset();
  if (j.contains("stall") && j["stall"].is_object()) { CollectiveStall s; from_json(j["stall"], s); d.stall = s; }
  d.desync.reset();
  if (j.contains("desync") && j["desync"].is_object()) { RankDesync s; from_json(j["desync"], s); d.desync = s; }
}

}  // namespace harness
