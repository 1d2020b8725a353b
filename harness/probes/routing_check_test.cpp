// Routing expectations come from what the cell asked for. A model whose own
// resolution of a flag is wrong — it ignores NSA_PREFILL_BATCHED=1 — is caught
// with the flag named, because the check never reads that resolution.
#include "harness/probes/routing_check.h"

#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include "nsa/model.h"
#include "nsa/nsa_layer.h"

namespace harness {
namespace {

struct Routes : nsa::Observer {
  std::map<std::string, std::string> ran;
  void route(std::string_view branch, std::string_view impl) override { ran[std::string(branch)] = impl; }
};

// The tiny layer's routes under a runtime resolved from `flags`, then bent by `bend`.
std::map<std::string, std::string> routes_of_layer(const std::map<std::string, std::string>& flags,
                                                   const std::function<void(nsa::Runtime&)>& bend) {
  nsa::ModelConfig c;
  c.nsa.cmp_block = 8, c.nsa.cmp_stride = 4, c.nsa.sel_block = 16, c.nsa.sel_count = 4, c.nsa.window = 32;
  at::manual_seed(1);
  auto w = nsa::init_nsa_weights(c, at::TensorOptions().dtype(at::kFloat)).to(at::kCPU, at::kFloat);
  nsa::Runtime rt;
  for (auto& [k, v] : flags) rt.flags.set(k, v);
  rt.resolve();
  bend(rt);
  Routes routes;
  rt.observer = &routes;
  at::NoGradGuard ng;
  nsa::nsa_attention(w, at::randn({1, 40, c.d_model}), c, rt, 0);
  return routes.ran;
}

CellSpec spec_with(std::map<std::string, std::string> flags, AxisValues axes = {}) {
  CellSpec s;
  s.flags = std::move(flags);
  s.axes = std::move(axes);
  return s;
}

TEST(RoutingCheck, CatchesAModelThatIgnoresPrefillBatchedOneAndNamesTheFlag) {
  const std::map<std::string, std::string> flags = {{"NSA_PREFILL_BATCHED", "1"}};
  // The model's own reading of the flag is wrong: it runs the sequential path.
  auto ran = routes_of_layer(flags, [](nsa::Runtime& rt) { rt.prefill_batched = false; });
  auto verdicts = check_routes(RequestedFlags(spec_with(flags), {}), false, ran);
  ASSERT_EQ(verdicts.size(), 3u);
  for (auto& v : verdicts) {
    EXPECT_FALSE(v.ok) << v.branch;
    EXPECT_EQ(v.ran, "sequential");
    EXPECT_EQ(v.ignored_flag, "NSA_PREFILL_BATCHED=1") << v.branch;
  }
}

TEST(RoutingCheck, AHealthyModelRunsWhatTheScenarioAskedForOnEitherPrefillAxisValue) {
  for (std::string prefill : {"batched", "sequential"}) {
    auto spec = spec_with({{"NSA_PREFILL_BATCHED", prefill == "batched" ? "1" : "0"}}, {{"prefill", prefill}});
    auto ran = routes_of_layer(spec.flags, [](nsa::Runtime&) {});
    for (auto& v : check_routes(RequestedFlags(spec, {}), false, ran)) EXPECT_TRUE(v.ok) << v.branch << " " << v.ran;
  }
}

TEST(RoutingCheck, NamesSelMaskWhenTheMaskWasAskedForAndThePackRan) {
  const std::map<std::string, std::string> flags = {{"NSA_USE_SEL_MASK", "1"}};
  auto ran = routes_of_layer(flags, [](nsa::Runtime& rt) { rt.sel_mask = false; });
  auto verdicts = check_routes(RequestedFlags(spec_with(flags), {}), false, ran);
  int flagged = 0;
  for (auto& v : verdicts) {
    if (v.branch != "slc") {
      EXPECT_TRUE(v.ok) << v.branch;
      continue;
    }
    ++flagged;
    EXPECT_FALSE(v.ok);
    EXPECT_EQ(v.ignored_flag, "NSA_USE_SEL_MASK=1");
  }
  EXPECT_EQ(flagged, 1);
}

TEST(RoutingCheck, ARouteNoSettingExplainsIsAMismatchNamingTheDecidingFlag) {
  auto verdicts = check_routes(RequestedFlags(spec_with({}), {}), false, {{"win", "reference"}});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_FALSE(verdicts[0].ok);
  EXPECT_EQ(verdicts[0].expected, "batched");
  EXPECT_EQ(verdicts[0].ignored_flag, "NSA_FORCE_PARITY=0");
  EXPECT_EQ(verdicts[0].deciding_flag, "NSA_PREFILL_BATCHED=1");
}

TEST(RequestedFlags, AxesOverFlagsOverEnvironmentOverRegistryDefaults) {
  EXPECT_TRUE(RequestedFlags(spec_with({}), {}).on("NSA_PREFILL_BATCHED"));  // registry default 1
  EXPECT_FALSE(RequestedFlags(spec_with({}), {{"NSA_PREFILL_BATCHED", "0"}}).on("NSA_PREFILL_BATCHED"));
  EXPECT_TRUE(RequestedFlags(spec_with({{"NSA_PREFILL_BATCHED", "1"}}), {{"NSA_PREFILL_BATCHED", "0"}})
                  .on("NSA_PREFILL_BATCHED"));
  EXPECT_FALSE(RequestedFlags(spec_with({{"NSA_PREFILL_BATCHED", "1"}}, {{"prefill", "sequential"}}), {})
                   .on("NSA_PREFILL_BATCHED"));
  EXPECT_TRUE(RequestedFlags(spec_with({}, {{"NSA_USE_SEL_MASK", "1"}}), {}).on("NSA_USE_SEL_MASK"));
}

TEST(RoutingCheck, ExpectsTheCudaKernelOnlyOnCudaAndWhereItsFlagIsOn) {
  RequestedFlags defaults(spec_with({}), {});
  EXPECT_EQ(expected_route("slc", defaults, true), "cuda.slc");
  EXPECT_EQ(expected_route("slc", defaults, false), "batched.pack");
  EXPECT_EQ(expected_route("win", defaults.with("NSA_USE_CUDA_WIN", "0"), true), "batched");
  EXPECT_EQ(expected_route("cmp", defaults.with("NSA_FORCE_PARITY", "1"), true), "reference");
}

// Sequential prefill: the decode kernels on CUDA (NSA_USE_CUDA_DECODE, default
// on), the ATen decode step elsewhere or when it is off; a model that takes the
// ATen step on CUDA although the flag asked for the kernels is named by it.
TEST(RoutingCheck, SequentialOnCudaExpectsTheDecodeKernelsAndNamesTheirFlag) {
  const RequestedFlags seq(spec_with({}, {{"prefill", "sequential"}}), {});
  EXPECT_EQ(expected_route("slc", seq, true), "cuda.decode");
  EXPECT_EQ(expected_route("slc", seq, false), "sequential");
  EXPECT_EQ(expected_route("win", seq.with("NSA_USE_CUDA_DECODE", "0"), true), "sequential");
  EXPECT_EQ(expected_route("cmp", seq.with("NSA_USE_CUDA_CMP", "0"), true), "cuda.decode");  // batched-only flag

  auto verdicts = check_routes(seq, true, {{"win", "sequential"}});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_FALSE(verdicts[0].ok);
  EXPECT_EQ(verdicts[0].ignored_flag, "NSA_USE_CUDA_DECODE=1");
  EXPECT_EQ(verdicts[0].deciding_flag, "NSA_USE_CUDA_DECODE=1");
  EXPECT_TRUE(check_routes(seq, true, {{"win", "cuda.decode"}})[0].ok);
}

// The block's MLP: the fused SwiGLU on CUDA unless NSA_FUSED_MLP=0, the ATen ops
// on the CPU; no attention flag moves it. A model that runs the ATen ops on CUDA
// although the flag asked for the kernel is named by that flag.
TEST(RoutingCheck, TheMlpAndNormFollowTheirOwnFlagAloneAndAreNamedByIt) {
  const RequestedFlags defaults(spec_with({}), {});
  EXPECT_EQ(expected_route("mlp", defaults, true), "cuda.swiglu");
  EXPECT_EQ(expected_route("mlp", defaults, false), "aten");
  EXPECT_EQ(expected_route("mlp", defaults.with("NSA_FUSED_MLP", "0"), true), "aten");
  EXPECT_EQ(expected_route("mlp", defaults.with("NSA_FORCE_PARITY", "1"), true), "cuda.swiglu");
  const RequestedFlags seq(spec_with({}, {{"prefill", "sequential"}}), {});
  EXPECT_EQ(expected_route("mlp", seq, true), "cuda.swiglu");

  auto verdicts = check_routes(defaults, true, {{"mlp", "aten"}});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_FALSE(verdicts[0].ok);
  EXPECT_EQ(verdicts[0].ignored_flag, "NSA_FUSED_MLP=1");
  EXPECT_EQ(verdicts[0].deciding_flag, "NSA_FUSED_MLP=1");
  EXPECT_TRUE(check_routes(defaults.with("NSA_FUSED_MLP", "0"), true, {{"mlp", "aten"}})[0].ok);

  // The residual add + norm likewise, by NSA_FUSED_NORM alone.
  EXPECT_EQ(expected_route("norm", defaults, true), "cuda.add_rms_norm");
  EXPECT_EQ(expected_route("norm", defaults, false), "aten");
  EXPECT_EQ(expected_route("norm", defaults.with("NSA_FUSED_NORM", "0"), true), "aten");
  EXPECT_EQ(expected_route("norm", defaults.with("NSA_FUSED_MLP", "0"), true), "cuda.add_rms_norm");
  EXPECT_EQ(check_routes(defaults, true, {{"norm", "aten"}})[0].ignored_flag, "NSA_FUSED_NORM=1");
}

// The model itself reports its MLP and norm routes: the ATen ops on the CPU.
TEST(RoutingCheck, TheModelReportsItsMlpRoute) {
  nsa::ModelConfig c;
  c.n_layers = 1, c.nsa.cmp_block = 8, c.nsa.cmp_stride = 4, c.nsa.sel_block = 16,
  c.nsa.sel_count = 4, c.nsa.window = 32;
  at::manual_seed(1);
  nsa::Model m(c, at::TensorOptions().dtype(at::kFloat));
  nsa::Runtime rt;
  rt.resolve();
  Routes routes;
  rt.observer = &routes;
  at::NoGradGuard ng;
  m.forward(at::randint(0, c.vocab, {1, 20}), at::kFloat, rt);
  EXPECT_EQ(routes.ran["mlp"], "aten");
  EXPECT_EQ(routes.ran["norm"], "aten");
  for (auto& v : check_routes(RequestedFlags(spec_with({}), {}), false, routes.ran))
    EXPECT_TRUE(v.ok) << v.branch << " ran " << v.ran << ", expected " << v.expected;
}

}  // namespace
}  // namespace harness
