// The sequential prefill through the decode kernels (sequential_prefill.cpp)
// against the per-query reference in float64: outputs, choices and the
// gradient of every weight and of the input; and the cases where the ATen
// decode step must run instead.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/config.h"
#include "nsa/model.h"
#include "nsa/mutations.h"
#include "nsa/test_support.h"

namespace nsa::cuda {
namespace {
using namespace nsa::testing;

// Routes and progress the layer reports.
struct Recorder : Observer {
  std::vector<std::string> routes;
  std::vector<int64_t> tokens_done;
  void route(std::string_view branch, std::string_view impl) override {
    routes.push_back(std::string(branch) + "=" + std::string(impl));
  }
  void progress(std::string_view what, int64_t done, int64_t) override {
    if (what == "prefill_tokens") tokens_done.push_back(done);
  }
};

// The first rows (b, t, g) whose choices differ, each as "got | want", so a
// failure shows whether one block traded places (a near tie) or more.
std::string differing_choices(const at::Tensor& got, const at::Tensor& want) {
  std::string out;
  const at::Tensor g = got.to(at::kLong), w = want.to(at::kLong);
  int shown = 0;
  for (int64_t b = 0; b < g.size(0) && shown < 5; ++b)
    for (int64_t t = 0; t < g.size(1) && shown < 5; ++t)
      for (int64_t k = 0; k < g.size(2) && shown < 5; ++k) {
        const at::Tensor gr = g[b][t][k], wr = w[b][t][k];
        if (at::equal(gr, wr)) continue;
        out += "\n  b " + std::to_string(b) + " t " + std::to_string(t) + " g " + std::to_string(k) + ":";
        for (int64_t i = 0; i < gr.size(0); ++i) out += " " + std::to_string(gr[i].item<int64_t>());
        out += " |";
        for (int64_t i = 0; i < wr.size(0); ++i) out += " " + std::to_string(wr[i].item<int64_t>());
        ++shown;
      }
  return out;
}

TEST(CudaSequentialPrefill, MatchesTheReferenceWithEveryGradient) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  register_with_layer();
  // tiny: l = 8, d = 4, l' = 16, n = 4, w = 32. S = 5: no compressed block;
  // 40: the window still holds every token; 107, 130: all branches partial.
  // The decode kernels rank fp32 scores, the reference float64 ones: where two
  // blocks' scores lie within fp32's rounding of each other the two may
  // rightly choose differently, and comparing their outputs would compare
  // different functions. Such a draw (every differing row a near tie by the
  // reference's own margin) is replaced by a fresh one; any other difference
  // fails.
  constexpr double kNearTie = 1e-5;
  for (int64_t S : {5, 40, 107, 130}) {
    for (int attempt = 0;; ++attempt) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("S=" + std::to_string(S) + " seed=" + std::to_string(seed));
      auto lc = make_case(tiny(), 2, S, at::kDouble, seed);
      auto rt = runtime_with();
      Recorder rec;
      rt.observer = &rec;
      rt.heartbeat_every = 16;

      auto w_ref = lc.w.to(at::kCPU, at::kDouble, /*requires_grad=*/true);
      auto x_ref = lc.x.clone().requires_grad_();
      BranchOutputs ref, got;
      auto y_ref = nsa_attention(w_ref, x_ref, lc.cfg, rt, 0, Path::reference, &ref);
      y_ref.pow(2).sum().backward();

      rec.routes.clear();
      auto w = lc.w.to(at::kCUDA, at::kFloat, /*requires_grad=*/true);
      auto x = lc.x.to(at::kCUDA, at::kFloat).requires_grad_();
      auto y = nsa_attention(w, x, lc.cfg, rt, 0, Path::sequential, &got);
      for (const char* b : {"cmp", "slc", "win"})
        EXPECT_NE(std::find(rec.routes.begin(), rec.routes.end(), std::string(b) + "=cuda.decode"), rec.routes.end())
            << b << " did not run through the decode kernels";
      // Progress every 16 tokens and at the end, in order, as the ATen route reports it.
      std::vector<int64_t> want;
      for (int64_t t = 16; t < S; t += 16) want.push_back(t);
      want.push_back(S);
      EXPECT_EQ(rec.tokens_done, want);

      // The choices must be the reference's exactly: a differing choice would
      // make every comparison below about different functions.
      if (!at::equal(got.block_idx.cpu(), ref.block_idx)) {
        const at::Tensor differs = (got.block_idx.cpu() != ref.block_idx.cpu()).any(-1);  // [B,S,G]
        const bool near_ties = (ref.selection_margin.masked_select(differs) < kNearTie).all().item<bool>();
        ASSERT_TRUE(near_ties && attempt < 3)
            << "selected blocks differ from the reference" << (near_ties ? " at near ties in 4 draws" : "") << ":"
            << differing_choices(got.block_idx.cpu(), ref.block_idx);
        std::printf("[ redraw   ] choices differ only where the reference's margin is < %g:%s\n", kNearTie,
                    differing_choices(got.block_idx.cpu(), ref.block_idx).c_str());
        continue;
      }
      for (int b = 0; b < 3; ++b) EXPECT_LE(rel_max_err(got.o[b].cpu(), ref.o[b]), 1e-5) << nsa::branch_name(nsa::Branch(b));
      EXPECT_LE(rel_max_err(y.cpu(), y_ref), 1e-5);

      y.pow(2).sum().backward();
      EXPECT_LE(rel_max_err(x.grad().cpu().to(at::kDouble), x_ref.grad()), 1e-4) << "input";
      auto ref_named = w_ref.named();
      for (auto& [name, t] : w.named()) {
        const at::Tensor* want_grad = nullptr;
        for (auto& [rn, rt_] : ref_named)
          if (rn == name) want_grad = &rt_.grad();
        ASSERT_NE(want_grad, nullptr) << name;
        if (!want_grad->defined()) {  // S < l: the compression weights rightly get nothing
          EXPECT_TRUE(!t.grad().defined() || t.grad().abs().max().item<double>() == 0.0) << name;
          continue;
        }
        ASSERT_TRUE(t.grad().defined()) << name;
        EXPECT_LE(rel_max_err(t.grad().cpu().to(at::kDouble), *want_grad), 1e-4) << name;
      }
      break;
    }
  }
}

// At the production shape (m7c_125m: H 12, G 2, dk = dv = 64, l 32, d 16,
// l' 64, n 16, w 512), against the ATen decode step on the same GPU in fp32
// (an independent implementation, itself checked against the reference on
// the CPU): outputs and every gradient, for a prefix shorter than the window
// and one longer, where the choice is a real top-n.
TEST(CudaSequentialPrefill, MatchesTheAtenDecodeStepAtTheProductionShape) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  register_with_layer();
  for (int64_t S : {300, 1100}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("S=" + std::to_string(S) + " seed=" + std::to_string(seed));
    auto lc = make_case(load_model_config("m7c_125m"), 1, S, at::kFloat, seed);
    struct Run {
      at::Tensor y, x_grad;
      BranchOutputs br;
      std::vector<std::pair<std::string, at::Tensor>> grads;
    };
    const auto run = [&](const char* decode_kernels) {
      auto rt = runtime_with("NSA_USE_CUDA_DECODE", decode_kernels);
      auto w = lc.w.to(at::kCUDA, at::kFloat, /*requires_grad=*/true);
      auto x = lc.x.to(at::kCUDA, at::kFloat).requires_grad_();
      Run r;
      r.y = nsa_attention(w, x, lc.cfg, rt, 0, Path::sequential, &r.br);
      r.y.pow(2).sum().backward();
      r.x_grad = x.grad();
      for (auto& [name, t] : w.named()) r.grads.emplace_back(name, t.grad());
      return r;
    };
    const Run want = run("0"), got = run("1");
    ASSERT_TRUE(at::equal(got.br.block_idx, want.br.block_idx)) << "selected blocks differ from the ATen step's";
    for (int b = 0; b < 3; ++b)
      EXPECT_LE(rel_max_err(got.br.o[b].to(at::kDouble), want.br.o[b].to(at::kDouble)), 1e-5)
          << nsa::branch_name(nsa::Branch(b));
    EXPECT_LE(rel_max_err(got.x_grad.to(at::kDouble), want.x_grad.to(at::kDouble)), 1e-4) << "input";
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (size_t i = 0; i < got.grads.size(); ++i) {
      ASSERT_TRUE(got.grads[i].second.defined() && want.grads[i].second.defined()) << got.grads[i].first;
      EXPECT_LE(rel_max_err(got.grads[i].second.to(at::kDouble), want.grads[i].second.to(at::kDouble)), 1e-4)
          << got.grads[i].first;
    }
  }
}

// NSA_USE_CUDA_DECODE=0, and a planted sequential mutation, both run the ATen
// decode step (the mutation lives there) and say so.
TEST(CudaSequentialPrefill, TheAtenDecodeStepRunsWhenAskedOrMutated) {
  if (!kernels_available()) GTEST_SKIP() << "no CUDA device: " << unavailable_reason();
  register_with_layer();
  auto lc = make_case(tiny(), 1, 40, at::kFloat, fresh_seed());
  auto w = lc.w.to(at::kCUDA, at::kFloat);
  auto x = lc.x.to(at::kCUDA, at::kFloat);
  const auto routes_of = [&](Runtime rt) {
    Recorder rec;
    rt.observer = &rec;
    nsa_attention(w, x, lc.cfg, rt, 0, Path::sequential);
    return rec.routes;
  };
  const std::vector<std::string> aten = {"cmp=sequential", "slc=sequential", "win=sequential"};
  EXPECT_EQ(routes_of(runtime_with("NSA_USE_CUDA_DECODE", "0")), aten);
  const auto saved = mutations.mask();
  mutations.enable_csv("decode_window_one_short");
  const auto mutated = routes_of(runtime_with());
  mutations.set_mask(saved);
  EXPECT_EQ(mutated, aten);
  EXPECT_EQ(routes_of(runtime_with()),
            (std::vector<std::string>{"cmp=cuda.decode", "slc=cuda.decode", "win=cuda.decode"}));
}

}  // namespace
}  // namespace nsa::cuda
