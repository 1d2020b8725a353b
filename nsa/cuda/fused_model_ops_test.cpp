// The model's fused ops on the GPU — the MLP through one gate|up GEMM and the
// SwiGLU kernel (NSA_FUSED_MLP), each residual add with the norm after it
// (NSA_FUSED_NORM) — against the same model through the ATen ops, in fp32: the
// same loss and gradient of every parameter to fp32's tolerance, for NSA and
// dense attention, each fusion alone and both; and each reports the route its
// flag names.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/test_util.h"
#include "nsa/model.h"

namespace nsa::cuda {
namespace {
using testing::expect_close;
using testing::tolerance_for;

struct Routes : Observer {
  std::map<std::string, std::string> ran;
  void route(std::string_view branch, std::string_view impl) override { ran[std::string(branch)] = impl; }
};

struct RunResult {
  at::Tensor loss;
  std::vector<at::Tensor> grads;
  std::map<std::string, std::string> routes;
};

RunResult run_model(Model& m, const at::Tensor& batch, bool fused_mlp, bool fused_norm) {
  Runtime rt;
  rt.flags.set("NSA_FUSED_MLP", fused_mlp ? "1" : "0");
  rt.flags.set("NSA_FUSED_NORM", fused_norm ? "1" : "0");
  rt.resolve();
  Routes routes;
  rt.observer = &routes;
  for (auto& [name, p] : m.parameters())
    if (p.grad().defined()) p.mutable_grad().zero_();
  RunResult r;
  r.loss = m.loss(batch, at::kFloat, rt);
  r.loss.backward();
  for (auto& [name, p] : m.parameters()) r.grads.push_back(p.grad().clone());
  r.routes = routes.ran;
  return r;
}

TEST(FusedModelOps, MatchTheAtenOpsInLossAndEveryGradient) {
  NSA_REQUIRE_CUDA();
  register_with_layer();
  for (const char* attention : {"nsa", "dense"}) {
    ModelConfig c;
    c.attention = attention;
    // Four selection blocks of 16 keys at S=40, n = 4: every block is chosen,
    // so no near-tie in the block scores can flip between the two runs.
    c.nsa.cmp_block = 8, c.nsa.cmp_stride = 4, c.nsa.sel_block = 16, c.nsa.sel_count = 4, c.nsa.window = 32;
    at::manual_seed(7);
    Model m(c, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
    const at::Tensor batch =
        at::randint(0, c.vocab, {2, 41}, at::TensorOptions().device(at::kCUDA).dtype(at::kLong));
    const RunResult aten = run_model(m, batch, false, false);
    EXPECT_EQ(aten.routes.at("mlp"), "aten");
    EXPECT_EQ(aten.routes.at("norm"), "aten");
    for (auto [mlp, norm] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
      SCOPED_TRACE(std::string(attention) + " NSA_FUSED_MLP=" + (mlp ? "1" : "0") + " NSA_FUSED_NORM=" +
                   (norm ? "1" : "0"));
      const RunResult fused = run_model(m, batch, mlp, norm);
      EXPECT_EQ(fused.routes.at("mlp"), mlp ? "cuda.swiglu" : "aten");
      EXPECT_EQ(fused.routes.at("norm"), norm ? "cuda.add_rms_norm" : "aten");
      expect_close("loss", fused.loss, aten.loss.detach().cpu().to(at::kDouble), tolerance_for(at::kFloat));
      double scale = 0;  // the largest gradient element of any parameter
      for (const at::Tensor& g : aten.grads) scale = std::max(scale, g.abs().max().item<double>());
      for (size_t i = 0; i < fused.grads.size(); ++i) {
        const std::string name = "d " + m.parameters()[i].first;
        if (name.find("phi_k.b2") != std::string::npos) {
          // Zero by construction: φ's output bias adds one vector to every
          // compressed key, which shifts all of a query's compressed scores by
          // one constant; softmax ignores it (and the selection reads those
          // probabilities). Both runs hold rounding noise, far below the scale.
          EXPECT_LE(fused.grads[i].abs().max().item<double>(), 1e-6 * scale) << name;
          EXPECT_LE(aten.grads[i].abs().max().item<double>(), 1e-6 * scale) << name;
          continue;
        }
        expect_close(name, fused.grads[i], aten.grads[i].cpu().to(at::kDouble), tolerance_for(at::kFloat));
      }
    }
  }
}

}  // namespace
}  // namespace nsa::cuda
