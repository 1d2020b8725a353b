// The reverse index (reverse_index.h), both ways, against loops written from
// its definition on the CPU: for each key (b, g, j) in order, every (t, slot)
// in ascending order whose entry names j, with j a block that exists and
// starts at or before t; beside each query, the slot s its entry came from.
#include <vector>

#include "nsa/cuda/reverse_index.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

struct Expected {
  std::vector<int> query, slot;
  std::vector<int64_t> offset;
};

Expected by_definition(const at::Tensor& block_idx, int64_t sel_block, int64_t n_blocks) {
  const at::Tensor idx = block_idx.cpu().contiguous();
  const int* p = idx.data_ptr<int>();
  const int64_t B = idx.size(0), S = idx.size(1), G = idx.size(2), n = idx.size(3);
  Expected e;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < n_blocks; ++j) {
        e.offset.push_back(static_cast<int64_t>(e.query.size()));
        for (int64_t t = 0; t < S; ++t)
          for (int64_t s = 0; s < n; ++s)
            if (p[((b * S + t) * G + g) * n + s] == j && j * sel_block <= t) {
              e.query.push_back(static_cast<int>(t));
              e.slot.push_back(static_cast<int>(s));
            }
      }
  e.offset.push_back(static_cast<int64_t>(e.query.size()));
  return e;
}

void expect_matches(const ReverseIndex& got, const Expected& want, const std::string& what) {
  const at::Tensor off = got.offset.cpu();
  ASSERT_EQ(off.numel(), static_cast<int64_t>(want.offset.size())) << what;
  for (int64_t k = 0; k < off.numel(); ++k)
    ASSERT_EQ(off[k].item<int64_t>(), want.offset[static_cast<size_t>(k)]) << what << ": offset of key " << k;
  // Only the entries the offsets cover were written (the buffer is sized for
  // every slot): copy those, not the rest (initcheck reads the copy's source).
  const int64_t n = static_cast<int64_t>(want.query.size());
  const at::Tensor q = got.query.narrow(0, 0, n).cpu(), s = got.slot.narrow(0, 0, n).cpu();
  const int *qp = q.data_ptr<int>(), *sp = s.data_ptr<int>();
  for (size_t i = 0; i < want.query.size(); ++i) {
    ASSERT_EQ(qp[i], want.query[i]) << what << ": entry " << i;
    ASSERT_EQ(sp[i], want.slot[i]) << what << ": slot of entry " << i;
  }
}

// Random entries in [-2, n_blocks + 2): unused slots, blocks out of range and
// blocks past t (which see nothing), duplicates in a row, unsorted rows.
at::Tensor random_entries(int64_t B, int64_t S, int64_t G, int64_t n, int64_t n_blocks, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randint(-2, n_blocks + 2, {B, S, G, n}, gen, at::kInt).cuda();
}

struct Case {
  int64_t B, S, G, n, sel_block;
};

TEST(ReverseIndex, KernelsAndSortMatchTheDefinition) {
  NSA_REQUIRE_CUDA();
  const Case cases[] = {
      {1, 1, 1, 1, 64},      // one query
      {2, 130, 3, 16, 64},   // chunks of 64 queries and a partial one
      {1, 700, 2, 32, 16},   // a full warp of slots, 44 blocks
      {2, 1100, 1, 5, 1},    // 1100 one-key blocks
      {1, 9000, 2, 16, 64},  // past 8192: chunks of 256
  };
  for (const Case& c : cases) {
    const int64_t n_blocks = (c.S + c.sel_block - 1) / c.sel_block;
    const at::Tensor idx = random_entries(c.B, c.S, c.G, c.n, n_blocks, 1234 + uint64_t(c.S));
    const std::string what = "B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) + " G=" + std::to_string(c.G) +
                             " n=" + std::to_string(c.n) + " l'=" + std::to_string(c.sel_block);
    ASSERT_TRUE(reverse_index_kernels_apply(idx, n_blocks)) << what;
    const Expected want = by_definition(idx, c.sel_block, n_blocks);
    expect_matches(reverse_index_by_kernels(idx, c.sel_block, n_blocks), want, what + " (kernels)");
    expect_matches(reverse_index_by_sort(idx, c.sel_block, n_blocks), want, what + " (sort)");
  }
}

// The rows select_blocks gives (sorted, -1 last) and every query choosing
// block 0: one key holds every query.
TEST(ReverseIndex, EveryQueryChoosingOneBlock) {
  NSA_REQUIRE_CUDA();
  const int64_t B = 1, S = 300, G = 2, n = 16, l = 32, n_blocks = (S + l - 1) / l;
  at::Tensor idx = at::full({B, S, G, n}, -1, at::kInt);
  idx.select(3, 0).fill_(0);
  idx = idx.cuda();
  expect_matches(reverse_index_by_kernels(idx, l, n_blocks), by_definition(idx, l, n_blocks), "block 0 only");
}

TEST(ReverseIndex, WhereTheKernelsDoNotApplyTheSortDoes) {
  NSA_REQUIRE_CUDA();
  const at::Tensor wide = random_entries(1, 40, 1, 33, 4, 7);  // 33 slots: more than a warp
  EXPECT_FALSE(reverse_index_kernels_apply(wide, 4));
  expect_matches(reverse_index(wide, 16, 4), by_definition(wide, 16, 4), "n=33");
  const at::Tensor many = random_entries(1, 20, 1, 4, kReverseIndexMaxBlocks + 1, 8);
  EXPECT_FALSE(reverse_index_kernels_apply(many, kReverseIndexMaxBlocks + 1));
  EXPECT_FALSE(reverse_index_kernels_apply(wide.cpu(), 4));
}

}  // namespace
}  // namespace nsa::cuda
