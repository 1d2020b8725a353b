// Handing GPU groups to cells: whole groups, never shared, waits bounded.
#include "harness/run/gpu_pool.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace harness::run {
namespace {

std::vector<VisibleGpu> gpus(int n) {
  std::vector<VisibleGpu> out;
  for (int i = 0; i < n; ++i) out.push_back(VisibleGpu{GpuDevice{i, "GPU-" + std::to_string(i), "Fake"}, std::to_string(i)});
  return out;
}

TEST(GpuPool, ConsecutiveGroupsAndTheLeftoverUnused) {
  GpuPool pool(gpus(5), 2);
  ASSERT_EQ(pool.groups(), 2u);
  EXPECT_EQ(cuda_visible_devices(pool.group(0)), "0,1");
  EXPECT_EQ(cuda_visible_devices(pool.group(1)), "2,3");
  ASSERT_EQ(pool.unused().size(), 1u);
  EXPECT_EQ(pool.unused()[0].token, "4");
}

TEST(GpuPool, AHeldGroupIsNotHandedOutAgainUntilReleased) {
  GpuPool pool(gpus(2), 1);
  auto a = pool.acquire(nullptr, 1);
  auto b = pool.acquire(nullptr, 1);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  // Full: the third waits, and is served once the first is released.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pool.release(*a);
  });
  auto c = pool.acquire(nullptr, 30);
  releaser.join();
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, *a);
}

TEST(GpuPool, WaitsEndAtTheDeadlineOrTheStop) {
  GpuPool pool(gpus(1), 1);
  auto held = pool.acquire(nullptr, 1);
  ASSERT_TRUE(held);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(pool.acquire(nullptr, 0.2));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
  EXPECT_FALSE(pool.acquire([] { return true; }, 60));  // returns at once, long before 60 s
  EXPECT_FALSE(GpuPool(gpus(1), 2).acquire(nullptr, 60));  // no group at all: nothing to wait for
}

TEST(GpuPool, LeaseReleasesOnScopeExit) {
  GpuPool pool(gpus(1), 1);
  {
    GpuLease lease(pool, *pool.acquire(nullptr, 1));
    EXPECT_FALSE(pool.acquire(nullptr, 0));
  }
  EXPECT_TRUE(pool.acquire(nullptr, 0));
}

// A world_size cell: a GPU per rank when the pool has that many, else the
// cell's default (its ranks then share them over Gloo); never fewer than per_cell.
TEST(GpuPool, WorldSizeCellsTakeAGpuPerRankWhenThereAreEnough) {
  GpuPool four(gpus(4), 1);
  EXPECT_EQ(four.count_for(1), 1u);
  EXPECT_EQ(four.count_for(2), 2u);
  EXPECT_EQ(four.count_for(4), 4u);
  EXPECT_EQ(four.count_for(8), 1u);  // more ranks than GPUs: one GPU, shared
  GpuPool pairs(gpus(4), 2);
  EXPECT_EQ(pairs.count_for(1), 2u);
  EXPECT_EQ(pairs.count_for(3), 3u);
  EXPECT_EQ(pairs.count_for(5), 2u);
}

// Blocks of different sizes never overlap, and a block starts at a multiple
// of its size (a pair is GPUs 0-1 or 2-3, never 1-2).
TEST(GpuPool, BlocksOfMixedSizesNeverShareAGpu) {
  GpuPool pool(gpus(4), 1);
  auto one = pool.acquire(1, nullptr, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(*one, (GpuBlock{0, 1}));
  auto pair = pool.acquire(2, nullptr, 1);
  ASSERT_TRUE(pair);
  EXPECT_EQ(*pair, (GpuBlock{2, 2}));  // 0-1 is half held
  EXPECT_EQ(cuda_visible_devices(pool.gpus_of(*pair)), "2,3");
  EXPECT_FALSE(pool.acquire(2, nullptr, 0.1));  // 0-1 still half held, 2-3 held
  auto other = pool.acquire(1, nullptr, 1);
  ASSERT_TRUE(other);
  EXPECT_EQ(*other, (GpuBlock{1, 1}));
  EXPECT_FALSE(pool.acquire(4, nullptr, 0.1));
  pool.release(*one);
  pool.release(*other);
  auto again = pool.acquire(2, nullptr, 1);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, (GpuBlock{0, 2}));
  EXPECT_FALSE(pool.acquire(5, nullptr, 60));  // larger than the pool: nothing to wait for
}

// --cells-per-gpu K: up to K cells on one GPU, the lowest first; each lease
// learns the most cells that held its GPU at once while it was held.
TEST(GpuPool, SharedGpusHoldUpToKCellsAndEachLeaseCountsItsPeak) {
  GpuPool pool(gpus(2), 1, 3);
  auto a = pool.acquire(nullptr, 1);
  auto b = pool.acquire(nullptr, 1);
  auto c = pool.acquire(nullptr, 1);
  auto d = pool.acquire(nullptr, 1);  // GPU 0 full: the next lowest
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(*a, (GpuBlock{0, 1}));
  EXPECT_EQ(*c, (GpuBlock{0, 1}));
  EXPECT_EQ(*d, (GpuBlock{1, 1}));
  EXPECT_EQ(pool.release(*d), 1);  // alone on GPU 1 the whole time
  EXPECT_EQ(pool.release(*a), 3);  // three on GPU 0 at once
  EXPECT_EQ(pool.release(*a), 0);  // given back twice: nothing more to free
  auto e = pool.acquire(nullptr, 1);  // GPU 0 has room again (b, c, e)
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, (GpuBlock{0, 1}));
  EXPECT_EQ(pool.release(*b), 3);
  EXPECT_EQ(pool.release(*c), 3);
  EXPECT_EQ(pool.release(*e), 3);  // it joined b and c
  auto f = pool.acquire(nullptr, 1);
  ASSERT_TRUE(f);
  GpuLease lease(pool, *f);
  EXPECT_EQ(lease.release(), 1);
  EXPECT_EQ(lease.release(), 0);
}

// A pair shares with the single cells on either of its GPUs.
TEST(GpuPool, SharedBlocksCountHoldersOnAnyOfTheirGpus) {
  GpuPool pool(gpus(2), 1, 2);
  auto one = pool.acquire(1, nullptr, 1);
  auto pair = pool.acquire(2, nullptr, 1);
  ASSERT_TRUE(one && pair);
  EXPECT_FALSE(pool.acquire(2, nullptr, 0.1));  // GPU 0 holds two already
  auto second = pool.acquire(1, nullptr, 1);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, (GpuBlock{1, 1}));
  EXPECT_EQ(pool.release(*pair), 2);
  EXPECT_EQ(pool.release(*one), 2);
  EXPECT_EQ(pool.release(*second), 2);
}

TEST(NeedsGpu, AutoFollowsCudaAvailability) {
  CellSpec c;
  c.device = "auto";
  EXPECT_TRUE(needs_gpu(c, true));
  EXPECT_FALSE(needs_gpu(c, false));
  c.device = "cpu";
  EXPECT_FALSE(needs_gpu(c, true));
}

}  // namespace
}  // namespace harness::run
