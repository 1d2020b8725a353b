// Routing: which implementation computed each branch (as the layer reports it)
// against what the flags asked for; flags that cannot take effect here.
#include "harness/probes/probes.h"

namespace harness {
namespace {

std::string cuda_flag(const std::string& branch) {
  return branch == "slc" ? "NSA_USE_CUDA_SEL" : branch == "win" ? "NSA_USE_CUDA_WIN" : "NSA_USE_CUDA_CMP";
}
bool cuda_flag_on(const nsa::Runtime& rt, const std::string& branch) {
  return branch == "slc" ? rt.use_cuda_sel : branch == "win" ? rt.use_cuda_win : rt.use_cuda_cmp;
}

class RoutingProbe : public Probe {
 public:
  std::string name() const override { return "routing"; }
  void on_start(ProbeContext& ctx) override {
    if (ctx.device.is_cuda()) return;
    for (const char* flag : {"NSA_USE_CUDA_SEL", "NSA_USE_CUDA_WIN", "NSA_USE_CUDA_CMP"}) {
      auto it = ctx.spec.flags.find(flag);
      if (it == ctx.spec.flags.end() || !ctx.rt.flags.get_bool(flag)) continue;
      Finding f;
      f.code = std::string(reason::flag_no_effect);
      f.severity = Severity::warning;
      f.title = std::string(flag) + "=1 cannot take effect on the CPU";
      f.detail = "The flag selects a CUDA kernel; this cell runs on the CPU, so the batched ATen path ran instead.";
      f.location = flag;
      ctx.report(f);
    }
  }
  void on_step_end(ProbeContext& ctx) override {
    if (checked_ || ctx.tap.routes.empty()) return;
    checked_ = true;
    auto& rt = ctx.rt;
    nlohmann::json table = nlohmann::json::array();
    for (auto& [branch, impl] : ctx.tap.routes) {
      std::string expected, flag;
      if (rt.force_reference) expected = "reference", flag = "NSA_FORCE_PARITY=1";
      else if (!rt.prefill_batched) expected = "sequential", flag = "NSA_PREFILL_BATCHED=0";
      else if (ctx.device.is_cuda() && cuda_flag_on(rt, branch))
        expected = "cuda." + branch, flag = cuda_flag(branch) + "=1";
      else if (branch == "slc") {
        if (rt.sel_mask) expected = "batched.mask", flag = "NSA_USE_SEL_MASK=1";
        else expected = "batched.pack", flag = rt.sel_pack ? "NSA_USE_SEL_PACK=1" : "NSA_USE_SEL_MASK=0";
      } else expected = "batched", flag = "NSA_PREFILL_BATCHED=1";
      if (ctx.device.is_cuda() && rt.prefill_batched && !rt.force_reference && !cuda_flag_on(rt, branch))
        flag = cuda_flag(branch) + "=0";
      bool ok = impl == expected;
      table.push_back({{"branch", branch}, {"ran", impl}, {"expected", expected}, {"flag", flag}, {"ok", ok}});
      if (!ok) {
        Finding f;
        f.code = std::string(reason::routing_mismatch);
        f.severity = Severity::blocking;
        f.title = "branch " + branch + " ran '" + impl + "' although " + flag + " asks for '" + expected + "'";
        f.detail = "The flag did not route the branch where it says: the implementation that actually ran reports "
                   "itself as '" + impl + "'.";
        f.location = "branch " + branch;
        f.evidence = {{"branch", branch}, {"ran", impl}, {"expected", expected}, {"flag", flag}};
        ctx.report(f);
      }
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
