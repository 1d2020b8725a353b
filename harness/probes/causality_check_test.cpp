// Causality cut points and leak detection, against toy models whose leaks are
// known exactly and against the real tiny model (healthy, then with the
// catalogue's planted compressed-block leak).
#include "harness/probes/causality_check.h"

#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include "nsa/faults.h"
#include "nsa/model.h"

namespace harness {
namespace {

nsa::NsaParams tiny_params() {
  nsa::NsaParams p;
  p.cmp_block = 8, p.cmp_stride = 4, p.sel_block = 16, p.sel_count = 4, p.window = 32;
  return p;
}

bool has(const std::vector<int64_t>& v, int64_t t) { return std::find(v.begin(), v.end(), t) != v.end(); }

TEST(CausalityCutPoints, CoverBothEndsTheWindowEdgeAndBothSidesOfTheBoundariesNearTheMiddle) {
  const auto cuts = causality_cut_points(100, tiny_params(), 1);
  for (int64_t t : {0, 98, 31, 32, 33}) EXPECT_TRUE(has(cuts, t)) << t;
  // Compressed blocks end at 4i + 7; near the middle: 47 and 51, each with the position before.
  for (int64_t t : {46, 47, 50, 51}) EXPECT_TRUE(has(cuts, t)) << t;
  // The selection boundary nearest 50 is 48: positions 47 and 48.
  EXPECT_TRUE(has(cuts, 47) && has(cuts, 48));
  EXPECT_TRUE(std::is_sorted(cuts.begin(), cuts.end()));
  for (int64_t t : cuts) EXPECT_TRUE(t >= 0 && t <= 98);
}

TEST(CausalityPerturbedBatch, ChangesEveryTokenAfterTheCutAndNothingBefore) {
  auto tokens = at::arange(20, at::kLong);
  auto b = perturbed_batch(tokens, {0, 7}, 256, 3);
  ASSERT_EQ(b.size(0), 3);
  EXPECT_TRUE(at::equal(b[0], tokens));
  EXPECT_TRUE(at::equal(b[2].narrow(0, 0, 8), tokens.narrow(0, 0, 8)));
  EXPECT_TRUE((b[2].narrow(0, 8, 12) != tokens.narrow(0, 8, 12)).all().item<bool>());
  EXPECT_TRUE((b[1].narrow(0, 1, 19) != tokens.narrow(0, 1, 19)).all().item<bool>());
}

// A toy "layer": y_t = Σ_{u ≤ t} token_u·(u+1), plus, where `leaky(t)`, token_{t+1}.
std::vector<at::Tensor> toy_forward(const at::Tensor& batch, const std::function<bool(int64_t)>& leaky) {
  auto x = batch.to(at::kDouble) * (at::arange(batch.size(1), at::kDouble) + 1);
  auto y = x.cumsum(1);
  for (int64_t t = 0; t + 1 < batch.size(1); ++t)
    if (leaky(t)) y.select(1, t).add_(batch.select(1, t + 1).to(at::kDouble));
  return {y.unsqueeze(-1)};
}

TEST(CausalityFindLeaks, CatchesAPositionThatSeesTheNextTokenOnlyJustBeforeACompressedBlockEnds) {
  const auto p = tiny_params();
  const int64_t S = 100;
  const auto cuts = causality_cut_points(S, p, 1);
  auto batch = perturbed_batch(at::randint(0, 256, {S}, at::kLong), cuts, 256, 2);
  // Off by one at the boundary: position e−1 already sees block i, whose last token is e = 4i + 7.
  auto leaks = find_leaks(toy_forward(batch, [&](int64_t t) { return (t + 1 - 7) % 4 == 0 && t + 1 >= 7; }), cuts,
                          1e-9);
  ASSERT_FALSE(leaks.empty());
  for (auto& l : leaks) {
    EXPECT_EQ(l.first_changed, l.cut) << "only the position right before a block end leaks";
    EXPECT_EQ((l.cut + 1 - 7) % 4, 0);
    EXPECT_EQ(l.layer, 0);
  }
  EXPECT_TRUE(std::any_of(leaks.begin(), leaks.end(), [](auto& l) { return l.cut == 46 || l.cut == 50; }));
}

TEST(CausalityFindLeaks, QuietForACausalModel) {
  const auto cuts = causality_cut_points(100, tiny_params(), 1);
  auto batch = perturbed_batch(at::randint(0, 256, {100}, at::kLong), cuts, 256, 2);
  EXPECT_TRUE(find_leaks(toy_forward(batch, [](int64_t) { return false; }), cuts, 1e-9).empty());
}

// In forwards of row 0 and a few cut rows: the same leaks, in cut order, as one
// forward of the whole batch, each forward led by the unperturbed row.
TEST(CausalityFindLeaks, InSeveralForwardsTheSameLeaksAsInOne) {
  const auto p = tiny_params();
  const auto cuts = causality_cut_points(100, p, 1);
  const auto n = static_cast<int64_t>(cuts.size());
  auto batch = perturbed_batch(at::randint(0, 256, {100}, at::kLong), cuts, 256, 2);
  const auto leaky = [](int64_t t) { return (t + 1 - 7) % 4 == 0 && t + 1 >= 7; };
  const auto whole = find_leaks(toy_forward(batch, leaky), cuts, 1e-9);
  ASSERT_FALSE(whole.empty());
  for (int64_t per : {int64_t(1), int64_t(2), int64_t(3), n, n + 5}) {
    SCOPED_TRACE(per);
    int64_t calls = 0;
    const auto parts = find_leaks_in_forwards(batch, cuts, per, 1e-9, [&](const at::Tensor& rows) {
      ++calls;
      EXPECT_TRUE(at::equal(rows[0], batch[0])) << "each forward starts with the unperturbed row";
      EXPECT_LE(rows.size(0), per + 1);
      return toy_forward(rows, leaky);
    });
    EXPECT_EQ(calls, (n + per - 1) / per);
    ASSERT_EQ(parts.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(parts[i].cut, whole[i].cut);
      EXPECT_EQ(parts[i].first_changed, whole[i].first_changed);
      EXPECT_EQ(parts[i].layer, whole[i].layer);
      EXPECT_DOUBLE_EQ(parts[i].change, whole[i].change);
    }
  }
}

// The CPU paths' S×S float64 scores per (row, head) against the budget: at S
// 4096 with 4 heads one row is 4096² · 4 · 8 B = 512 MiB, so 2 GiB holds 4 rows
// (row 0 and 3 cuts); at 8192 not even two, and still one cut a forward.
TEST(CausalityCutsPerForward, BoundsTheCpuRowsByTheirScoreMatricesNotTheGpuOnes) {
  EXPECT_EQ(causality_cuts_per_forward(4096, 4, false, 13, int64_t(2) << 30), 3);
  EXPECT_EQ(causality_cuts_per_forward(8192, 4, false, 13, int64_t(2) << 30), 1);
  EXPECT_EQ(causality_cuts_per_forward(100, 4, false, 13, int64_t(2) << 30), 13);  // all fit
  EXPECT_EQ(causality_cuts_per_forward(65536, 12, true, 13), 13);                  // CUDA: one forward
  EXPECT_EQ(causality_cuts_per_forward(100, 4, false, 0), 1);                      // never 0
}

struct BlockOuts : nsa::Observer {
  std::vector<at::Tensor> outs;
  bool wants_tensors() const override { return true; }
  void tensor(std::string_view name, int, int, const at::Tensor& t) override {
    if (name == "block_out") outs.push_back(t.detach());
  }
};

std::vector<CausalLeak> leaks_of_tiny_model(bool batched) {
  nsa::ModelConfig c;
  c.d_model = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_groups = 2, c.d_k = 16, c.d_v = 16;
  c.nsa = tiny_params();
  at::manual_seed(3);
  nsa::Model model(c, at::TensorOptions().dtype(at::kFloat));
  const int64_t S = 100;
  const auto cuts = causality_cut_points(S, c.nsa, 4);
  auto batch = perturbed_batch(at::randint(0, 256, {S}, at::kLong), cuts, 256, 5);
  BlockOuts outs;
  nsa::Runtime rt;
  rt.prefill_batched = batched;
  rt.observer = &outs;
  at::NoGradGuard ng;
  model.forward(batch, at::kDouble, rt);
  return find_leaks(outs.outs, cuts, 1e-9);
}

TEST(CausalityOnTheModel, NoLeakThroughEitherPrefillPathOfTheTinyModel) {
  nsa::faults.disable_all();
  EXPECT_TRUE(leaks_of_tiny_model(true).empty());
  EXPECT_TRUE(leaks_of_tiny_model(false).empty());
}

TEST(CausalityOnTheModel, CatchesThePlantedCompressedBlockLeakOfTheBatchedPath) {
  nsa::faults.disable_all();
  nsa::faults.enable({"causal_leak"});
  auto leaks = leaks_of_tiny_model(true);
  nsa::faults.disable_all();
  ASSERT_FALSE(leaks.empty());
  EXPECT_EQ(leaks[0].layer, 0);
  EXPECT_LE(leaks[0].first_changed, leaks[0].cut);
}

}  // namespace
}  // namespace harness
