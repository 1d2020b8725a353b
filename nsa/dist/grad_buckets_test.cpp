#include "nsa/dist/grad_buckets.h"

#include <gtest/gtest.h>

namespace nsa::dist {
namespace {

TEST(GradBuckets, ReverseOrderUnderTheCapAndRoundTrip) {
  std::vector<at::Tensor> grads = {at::randn({4, 4}), at::randn({8}), at::randn({2, 3}), at::randn({5}).to(at::kHalf)};
  // 6 + 8 floats (56 bytes) fit a 100-byte bucket; 16 more would not.
  auto buckets = plan_buckets(grads, 100);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].dtype, at::kHalf);
  EXPECT_EQ(buckets[0].members, (std::vector<size_t>{3}));
  EXPECT_EQ(buckets[1].members, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(buckets[2].members, (std::vector<size_t>{0}));
  std::vector<at::Tensor> copy;
  for (auto& g : grads) copy.push_back(g.clone());
  for (auto& b : buckets) {
    at::Tensor flat = flatten_bucket(b, grads);
    EXPECT_EQ(flat.numel(), b.numel);
    unflatten_bucket(b, flat.mul(2), grads);
  }
  for (size_t k = 0; k < grads.size(); ++k) EXPECT_TRUE(at::equal(grads[k], copy[k].mul(2))) << k;
}

TEST(GradBuckets, DefaultCapHoldsASmallModelInOneBucket) {
  std::vector<at::Tensor> grads = {at::zeros({1000}), at::zeros({64, 64})};
  EXPECT_EQ(plan_buckets(grads).size(), 1u);
}

}  // namespace
}  // namespace nsa::dist
