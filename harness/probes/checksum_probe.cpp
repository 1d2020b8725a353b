// Checksum probe (world_size > 1 cells): each rank's parameter checksum after
// a step's update, which the distributed analysis compares across ranks
// (analysis/distributed/rank_checks.h: desync). A checksum reads every
// parameter back to the host, so it is sampled: the first step, every
// `every` steps and the last step. A desync found at a sampled step is then
// bounded by the last sampled step at which the ranks still agreed.
#include "harness/probes/probes.h"
#include "nsa/dist/data_parallel.h"

namespace harness {
namespace {

class ChecksumProbe : public Probe {
 public:
  explicit ChecksumProbe(int every) : every_(every) {}

  void on_step_end(ProbeContext& ctx) override {
    if (ctx.spec.train.world_size <= 1 || !checksum_due(ctx.step, every_, ctx.spec.train.steps)) return;
    const auto [sum, sq] = nsa::dist::parameter_checksum(ctx.model);
    ctx.events.emit(protocol::ev::checksum, {{"rank", ctx.rank}, {"step", ctx.step}, {"sum", sum}, {"sq", sq}});
  }

 private:
  int every_;
};

}  // namespace

bool checksum_due(int step, int every, int last_step) {
  return step == 1 || step == last_step || (every > 0 && step % every == 0);
}

std::unique_ptr<Probe> make_checksum_probe(const ProbeSpec& spec) {
  return std::make_unique<ChecksumProbe>(spec.every);
}

}  // namespace harness
