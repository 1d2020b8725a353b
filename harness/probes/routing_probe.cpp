// Routing: which implementation computed each branch (as the layer reports it)
// against what the cell asked for — its axes, its flags, the environment, the
// registry's defaults (routing_check.h) — never against the model's own
// resolution of those flags, which a routing bug would share. Also flags that
// cannot take effect here.
#include "harness/probes/probes.h"
#include "harness/probes/routing_check.h"

namespace harness {
namespace {

class RoutingProbe : public Probe {
 public:
  void on_start(ProbeContext& ctx) override {
    if (ctx.device.is_cuda()) return;
    const RequestedFlags requested(ctx.spec, nsa_environment());
    for (const char* flag : {"NSA_USE_CUDA_SEL", "NSA_USE_CUDA_WIN", "NSA_USE_CUDA_CMP"}) {
      if (!ctx.spec.flags.count(flag) || !requested.on(flag)) continue;
      Finding f;
      f.code = std::string(reason::flag_no_effect);
      f.severity = Severity::warning;
      f.title = std::string(flag) + "=1 cannot take effect on the CPU";
      f.detail = "The flag selects a CUDA kernel; this cell runs on the CPU, so the batched ATen path ran instead.";
      f.location = flag;
      ctx.report(f);
    }
  }
  // Routes are reported by the model's host code: until they have been checked
  // the step must run eagerly.
  bool watches_inside(int) const override { return !checked_; }
  void on_step_end(ProbeContext& ctx) override {
    if (checked_ || ctx.tap.routes.empty()) return;
    checked_ = true;
    const RequestedFlags requested(ctx.spec, nsa_environment());
    nlohmann::json table = nlohmann::json::array();
    for (auto& v : check_routes(requested, ctx.device.is_cuda(), ctx.tap.routes)) {
      table.push_back({{"branch", v.branch}, {"ran", v.ran}, {"expected", v.expected}, {"flag", v.deciding_flag},
                       {"ignored_flag", v.ignored_flag}, {"ok", v.ok}});
      if (v.ok) continue;
      Finding f;
      f.code = std::string(reason::routing_mismatch);
      f.severity = Severity::blocking;
      if (!v.ignored_flag.empty()) {
        f.title = v.ignored_flag + " was requested but changed nothing: branch " + v.branch + " ran '" + v.ran + "'";
        f.detail = "The cell asked for " + v.ignored_flag + ", which routes branch " + v.branch + " to '" + v.expected +
                   "'; the implementation that ran reports itself as '" + v.ran +
                   "', which is what the opposite setting gives. The model does not follow the flag.";
      } else {
        f.title = "branch " + v.branch + " ran '" + v.ran + "' although " + v.deciding_flag + " asks for '" +
                  v.expected + "'";
        f.detail = "The flags did not route the branch where they say: the implementation that actually ran "
                   "reports itself as '" + v.ran + "'.";
      }
      f.location = "branch " + v.branch;
      f.evidence = {{"branch", v.branch}, {"ran", v.ran}, {"expected", v.expected}, {"flag", v.deciding_flag},
                    {"ignored_flag", v.ignored_flag}};
      ctx.report(f);
    }
    ctx.table("routing", {{"step", ctx.step}, {"branches", table}});
  }

 private:
  bool checked_ = false;
};

}  // namespace

std::unique_ptr<Probe> make_routing_probe(const ProbeSpec&) { return std::make_unique<RoutingProbe>(); }
#ifndef NSA_WITH_CUPTI
// CPU-only build: there is no kernel to trace (the CUDA build has cupti_probe.cpp).
std::unique_ptr<Probe> make_cupti_probe(const ProbeSpec&) { return nullptr; }
#endif

}  // namespace harness
