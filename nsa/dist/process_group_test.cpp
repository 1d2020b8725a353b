// The backend rule, against its statement: NCCL exactly when every rank has a
// GPU of its own, Gloo otherwise (CPU, or ranks sharing GPUs); and a rank's GPU
// is its own index while there are enough, shared round-robin after.
#include "nsa/dist/process_group.h"

#include <gtest/gtest.h>

#include <set>

namespace nsa::dist {
namespace {

TEST(ChooseBackend, NcclOnlyWithAGpuPerRank) {
  for (int world = 2; world <= 8; ++world)
    for (int gpus = 0; gpus <= 8; ++gpus) {
      SCOPED_TRACE(testing::Message() << world << " ranks, " << gpus << " GPUs");
      EXPECT_EQ(choose_backend(/*cuda=*/false, world, gpus), "gloo");
      EXPECT_EQ(choose_backend(/*cuda=*/true, world, gpus), gpus >= world ? "nccl" : "gloo");
    }
}

TEST(RankGpu, OwnGpuWhileThereAreEnoughThenShared) {
  for (int gpus = 1; gpus <= 4; ++gpus)
    for (int world = 1; world <= 8; ++world) {
      std::multiset<int> used;
      for (int r = 0; r < world; ++r) {
        const int g = rank_gpu(r, gpus);
        EXPECT_TRUE(g >= 0 && g < gpus);
        used.insert(g);
      }
      // Distinct GPUs exactly when NCCL would be chosen; otherwise evenly shared.
      std::set<int> distinct(used.begin(), used.end());
      if (world <= gpus) EXPECT_EQ(static_cast<int>(distinct.size()), world);
      for (int g : distinct) EXPECT_LE(static_cast<int>(used.count(g)), (world + gpus - 1) / gpus);
    }
  EXPECT_EQ(rank_gpu(3, 0), 0);
}

}  // namespace
}  // namespace nsa::dist
