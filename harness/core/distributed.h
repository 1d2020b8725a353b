#pragma once
// What a world_size > 1 cell showed about its ranks, as typed records (the
// distributed analysis writes them, results.json and the report render them):
// which rank is stuck in which collective and who waits for it, which rank's
// parameters left the others' and from which step, which rank straggles.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness {

// One collective as a rank's flight recorder logged it: the same seq is the
// same collective on every rank as long as the ranks agree.
struct CollectiveRef {
  int64_t seq = 0;
  std::string op;   // "allreduce", "broadcast"
  int step = 0;     // training step that issued it (0: set-up)
  int bucket = 0;
};

struct RankFacts {
  int rank = 0;
  std::string outcome;                     // the rank's own outcome, as classified alone
  std::string device;                      // where it computed ("cpu", "cuda:0"; ranks may share a GPU under Gloo)
  int steps_completed = 0;
  std::optional<double> step_ms_median;    // warm steps
  std::optional<double> compute_ms_median; // step_ms − comm_ms: its own work, without waiting for others
  std::optional<double> comm_ms_median;    // blocked in collectives
  int64_t last_completed_seq = 0;
  std::optional<CollectiveRef> pending;    // the collective it was blocked in when it ended (never completed)
  std::string phase;                       // the innermost phase open when it ended ("" none)
  std::optional<double> last_heartbeat_s;  // child clock; unset: never beat
};

// A hang the flight records explain. kind "mismatch": the ranks' collectives
// stopped pairing up at `collective.seq` because `rank` left `collective` out
// (it issued `rank_issued` there instead). kind "not_reached": `rank` never
// issued `collective`, which the waiting ranks are blocked in.
struct CollectiveStall {
  std::string kind;
  int rank = -1;                           // the rank at fault; -1: the records do not single one out
  CollectiveRef collective;                // as the other ranks issued it
  std::optional<CollectiveRef> rank_issued;
  std::vector<int> waiting_ranks;          // blocked in `waiting_in`
  std::optional<CollectiveRef> waiting_in;
  std::optional<int> rank_last_step;       // the last step the rank at fault began
};

// Parameter checksums that stopped agreeing: `rank` differs from the
// reference ranks (the majority; on a tie the group holding rank 0, whose
// parameters every rank started from) from `first_step` on. Checksums are
// sampled (the checksum probe's `every`): the ranks last agreed after
// `last_agreeing_step` (0: the set-up broadcast), so the update that
// diverged is one of the steps last_agreeing_step + 1 … first_step.
struct RankDesync {
  int rank = -1;
  std::vector<int> diverging_ranks;
  int first_step = 0;
  std::vector<int> reference_ranks;
  double rank_sum = 0.0, reference_sum = 0.0;
  int last_agreeing_step = 0;
};

// A rank whose own work per step (compute_ms) is slower than the others' by a
// clear factor beyond their step-to-step noise.
struct Straggler {
  int rank = -1;
  double compute_ms_median = 0.0;
  double others_median_ms = 0.0;
  double others_noise_ms = 0.0;  // scaled MAD of the other ranks' steps
  double factor = 0.0;
};

struct DistributedFacts {
  int world_size = 1;
  std::string backend;  // gloo | nccl, as the ranks ran it (Gloo also over CUDA tensors when ranks share GPUs)
  std::vector<RankFacts> ranks;
  std::optional<CollectiveStall> stall;
  std::optional<RankDesync> desync;
  std::vector<Straggler> stragglers;
};

void to_json(nlohmann::json& j, const CollectiveRef& c);
void from_json(const nlohmann::json& j, CollectiveRef& c);
void to_json(nlohmann::json& j, const DistributedFacts& d);
void from_json(const nlohmann::json& j, DistributedFacts& d);

}  // namespace harness
