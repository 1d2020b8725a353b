// The one-sync checks against their plain statements: isfinite() per element
// for all_finite_together, the per-row loop of selection_row_violation (itself
// checked on rows written by hand from DESIGN.md §2) for selection_violations.
#include "harness/probes/tensor_checks.h"

#include <gtest/gtest.h>

#include <limits>

namespace harness {
namespace {

// The probes run these on the training device: CPU always, CUDA where present.
std::vector<at::Device> devices() {
  std::vector<at::Device> d = {at::kCPU};
  if (at::hasCUDA()) d.emplace_back(at::kCUDA, 0);
  return d;
}

std::vector<at::Tensor> on(const at::Device& d, std::vector<at::Tensor> ts) {
  for (auto& t : ts) t = t.to(d);
  return ts;
}

bool finite_one_by_one(const std::vector<at::Tensor>& ts) {
  for (auto& t : ts)
    if (!at::isfinite(t).all().item<bool>()) return false;
  return true;
}

// Every dtype the probes see, one tensor large enough for many threads, and a
// non-contiguous one (a transposed view), which the CUDA scan leaves to ATen.
std::vector<at::Tensor> mixed_tensors() {
  at::manual_seed(7);
  return {at::randn({33, 17}),          at::randn({5}).to(at::kBFloat16), at::randn({4, 4}).to(at::kHalf),
          at::randn({3, 2}, at::kDouble), at::randn({300000}) * 100,        at::randn({6, 9}).t()};
}

TEST(AllFiniteTogether, AgreesWithElementwiseIsfiniteWhereverOneValueIsPoisoned) {
  EXPECT_TRUE(all_finite_together({}));
  const double poisons[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity()};
  for (const auto& dev : devices()) {
    auto clean = on(dev, mixed_tensors());
    EXPECT_TRUE(all_finite_together(clean)) << dev;
    for (size_t which = 0; which < clean.size(); ++which)
      for (double poison : poisons) {
        auto ts = on(dev, mixed_tensors());
        // The last element in memory: a scan must not stop early.
        auto flat = ts[which].as_strided({ts[which].numel()}, {1});
        flat[flat.numel() - 1] = poison;
        ASSERT_FALSE(finite_one_by_one(ts));
        EXPECT_FALSE(all_finite_together(ts)) << dev << ": tensor " << which << " poisoned with " << poison;
      }
  }
}

TEST(AllFiniteTogether, LargeFiniteHalfTensorsAreFinite) {
  // Every element is finite in fp16, yet their sum (4096 × 60000) is far past
  // fp16's range: the check must not sum in the tensor's own type.
  for (const auto& dev : devices()) {
    auto big = at::full({4096}, 60000.0, at::TensorOptions().dtype(at::kHalf).device(dev));
    EXPECT_TRUE(all_finite_together({big, big.to(at::kBFloat16)})) << dev;
  }
}

TEST(SelectionRowViolation, HandWrittenRows) {
  // l' = 16, n = 4. t = 40 → current block 2; due: min(4, 3) = 3 blocks, forced 0, 2, 1.
  EXPECT_FALSE(selection_row_violation({0, 2, 1, -1}, 40, 16, 4));
  EXPECT_FALSE(selection_row_violation({2, -1, 0, 1}, 40, 16, 4));  // order and padding are free
  EXPECT_EQ(*selection_row_violation({0, 2, 3, -1}, 40, 16, 4), "block 3 starts after the query (t=40): it sees the future");
  EXPECT_EQ(*selection_row_violation({0, 2, 2, 1}, 40, 16, 4), "block 2 selected twice");
  EXPECT_EQ(*selection_row_violation({0, 2, -1, -1}, 40, 16, 4), "2 blocks selected where 3 are due");
  // t = 100 → block 6: 4 due, forced 0, 6, 5.
  EXPECT_FALSE(selection_row_violation({0, 6, 5, 3}, 100, 16, 4));
  EXPECT_EQ(*selection_row_violation({1, 6, 5, 3}, 100, 16, 4), "forced block 0 (initial or local) is missing");
  EXPECT_EQ(*selection_row_violation({0, 6, 4, 3}, 100, 16, 4), "forced block 5 (initial or local) is missing");
  // t = 3 → block 0 only.
  EXPECT_FALSE(selection_row_violation({0, -1, -1, -1}, 3, 16, 4));
}

// A valid selection for every row: forced blocks, then the highest others
// (any choice of others is valid), padded with -1.
at::Tensor valid_selection(int64_t B, int64_t S, int64_t G, int64_t n, int64_t lp) {
  auto idx = at::full({B, S, G, n}, -1, at::kLong);
  auto a = idx.accessor<int64_t, 4>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t cur = t / lp;
        std::vector<int64_t> row = {0};
        for (int64_t j : {cur, cur - 1})
          if (j > 0) row.push_back(j);
        for (int64_t j = cur - 2; j > 0 && int64_t(row.size()) < n; --j) row.push_back(j);
        for (size_t s = 0; s < row.size(); ++s) a[b][t][g][(s + t) % n] = row[s];  // scatter the slots
      }
  return idx;
}

TEST(SelectionViolations, AgreesWithTheRowStatementUnderRandomDamage) {
  const int64_t B = 2, S = 150, G = 2, n = 4, lp = 16;
  auto clean = valid_selection(B, S, G, n, lp);
  EXPECT_FALSE(selection_violations(clean, lp, n).any().item<bool>());
  at::manual_seed(11);
  int64_t broken_rows = 0;
  for (int trial = 0; trial < 40; ++trial) {
    auto idx = clean.clone();
    auto a = idx.accessor<int64_t, 4>();
    // Damage a few slots with values from -1 to past the last block.
    for (int k = 0; k < 6; ++k) {
      const auto draw = at::randint(0, 1 << 20, {5}, at::kLong);
      auto r = draw.accessor<int64_t, 1>();
      a[r[0] % B][r[1] % S][r[2] % G][r[3] % n] = r[4] % (S / lp + 3) - 1;
    }
    for (const auto& dev : devices())
      if (!dev.is_cpu())
        EXPECT_TRUE(at::equal(selection_violations(idx.to(dev), lp, n).cpu(), selection_violations(idx, lp, n))) << dev;
    auto bad = selection_violations(idx, lp, n);
    ASSERT_EQ(bad.sizes(), (std::vector<int64_t>{B, S, G}));
    broken_rows += bad.sum().item<int64_t>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t)
        for (int64_t g = 0; g < G; ++g) {
          std::vector<int64_t> row(n);
          for (int64_t s = 0; s < n; ++s) row[s] = a[b][t][g][s];
          ASSERT_EQ(bad[b][t][g].item<bool>(), selection_row_violation(row, t, lp, n).has_value())
              << "trial " << trial << " b " << b << " t " << t << " g " << g;
        }
  }
  EXPECT_GT(broken_rows, 40) << "the damage should break rows in most trials";
}

TEST(SelectionViolations, AcceptsInt32Indices) {
  auto idx = valid_selection(1, 40, 1, 4, 16).to(at::kInt);
  EXPECT_FALSE(selection_violations(idx, 16, 4).any().item<bool>());
  idx[0][39][0][0] = 5;
  EXPECT_TRUE(selection_violations(idx, 16, 4)[0][39][0].item<bool>());
}

}  // namespace
}  // namespace harness
