#include "harness/child/dist_rank.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace harness::child {
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string("world_size > 1 but ") + name + " is not set");
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 65535) throw std::runtime_error(std::string(name) + "='" + v + "' is not a valid number");
  return static_cast<int>(x);
}

nlohmann::json record_json(int rank, const nsa::dist::CollectiveRecord& r) {
  nlohmann::json e = {{"rank", rank}, {"seq", r.seq},     {"op", r.op},       {"step", r.step},
                      {"bucket", r.bucket}, {"numel", r.numel}, {"bytes", r.bytes},
                      {"state", nsa::dist::to_string(r.state)}};
  if (r.state == nsa::dist::CollectiveState::completed) e["wait_ms"] = r.wait_ms;
  return e;
}

}  // namespace

RankEnv rank_env_from_environment(int world_size) {
  RankEnv env;
  env.world_size = env_int("WORLD_SIZE");
  if (env.world_size != world_size)
    throw std::runtime_error("WORLD_SIZE=" + std::to_string(env.world_size) + " but the cell asks for world_size " +
                             std::to_string(world_size));
  env.rank = env_int("RANK");
  if (env.rank >= env.world_size) throw std::runtime_error("RANK is not below WORLD_SIZE");
  env.local_rank = std::getenv("LOCAL_RANK") ? env_int("LOCAL_RANK") : env.rank;
  env.master_port = env_int("MASTER_PORT");
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) env.master_addr = a;
  return env;
}

DistRank::DistRank(const RankEnv& env, const std::string& backend, double timeout_s, protocol::EventWriter& events)
    : env_(env), backend_(backend), events_(events) {
  const int rank = env.rank;
  log_.set_listener([this, rank](const nsa::dist::CollectiveRecord& r) {
    events_.emit(protocol::ev::collective, record_json(rank, r));
  });
  nsa::dist::DistConfig cfg;
  cfg.rank = env.rank;
  cfg.world_size = env.world_size;
  cfg.master_addr = env.master_addr;
  cfg.master_port = env.master_port;
  cfg.backend = backend;
  cfg.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  // The heartbeat starts before the rendezvous: a rank stuck connecting is alive, not dead.
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
  try {
    comm_ = nsa::dist::Comm::connect(cfg, log_);
  } catch (...) {
    stop_ = true;
    heartbeat_.join();
    throw;
  }
  dp_ = std::make_unique<nsa::dist::DataParallel>(*comm_);
}

DistRank::~DistRank() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
}

void DistRank::heartbeat_loop() {
  using namespace std::chrono;
  auto next = steady_clock::now();
  while (!stop_) {
    nlohmann::json e = {{"rank", env_.rank}, {"step", step_.load()}, {"last_seq", log_.last_seq()}};
    const auto p = log_.pending();
    if (p.seq > 0) e.update({{"pending_seq", p.seq}, {"pending_op", p.op}, {"pending_step", p.step}});
    events_.emit(protocol::ev::heartbeat, std::move(e));
    next += duration_cast<steady_clock::duration>(duration<double>(kHeartbeatS));
    while (!stop_ && steady_clock::now() < next) std::this_thread::sleep_for(milliseconds(50));
  }
}

double DistRank::take_wait_ms() { return comm_->take_wait_ms(); }

void DistRank::finish() {
  // A phase of its own, so a rank that waits here for a peer that never
  // comes reads as "in the final barrier", not as stuck somewhere in training.
  events_.emit(protocol::ev::phase_begin, {{"name", "final_barrier"}, {"step", step_.load()}});
  comm_->store_barrier("nsa/done");
  events_.emit(protocol::ev::phase_end, {{"name", "final_barrier"}, {"step", step_.load()}});
}

}  // namespace harness::child
