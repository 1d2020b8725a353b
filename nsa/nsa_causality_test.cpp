// Changing tokens after t leaves every output at positions ≤ t unchanged: per
// branch for each path, and for the whole model.
#include "nsa/model.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

TEST(Causality, EveryBranchOfEveryPathIgnoresTheFuture) {
  auto lc = make_case(tiny(), 2, 90, at::kDouble, fresh_seed());
  for (int64_t t0 : {0, 7, 8, 31, 47, 60}) {
    auto x2 = lc.x.clone();
    x2.narrow(1, t0 + 1, 90 - t0 - 1).normal_();
    for (auto path : {Path::reference, Path::batched, Path::sequential}) {
      SCOPED_TRACE(std::string(path_name(path)) + " t0=" + std::to_string(t0));
      BranchOutputs a, b;
      auto rt = runtime_with();
      auto ya = nsa_attention(lc.w, lc.x, lc.cfg, rt, 0, path, &a);
      auto yb = nsa_attention(lc.w, x2, lc.cfg, rt, 0, path, &b);
      for (int br = 0; br < 3; ++br)
        EXPECT_LE(rel_max_err(a.o[br].narrow(1, 0, t0 + 1), b.o[br].narrow(1, 0, t0 + 1)), 1e-12) << branch_name(Branch(br));
      EXPECT_TRUE(at::equal(a.block_idx.narrow(1, 0, t0 + 1), b.block_idx.narrow(1, 0, t0 + 1)));
      EXPECT_LE(rel_max_err(ya.narrow(1, 0, t0 + 1), yb.narrow(1, 0, t0 + 1)), 1e-12);
    }
  }
}

TEST(Causality, WholeModelLogitsIgnoreTheFuture) {
  at::manual_seed(fresh_seed());
  Model m(tiny(), at::TensorOptions().dtype(at::kDouble));
  auto tokens = at::randint(0, 256, {2, 70}, at::kLong);
  auto changed = tokens.clone();
  changed.narrow(1, 41, 29).random_(0, 256);
  auto rt = runtime_with();
  auto a = m.forward(tokens, at::kDouble, rt), b = m.forward(changed, at::kDouble, rt);
  EXPECT_LE(rel_max_err(a.narrow(1, 0, 41), b.narrow(1, 0, 41)), 1e-12);
  EXPECT_GT(rel_max_err(a.narrow(1, 41, 29), b.narrow(1, 41, 29)), 1e-6) << "the perturbation must reach later positions";
}

}  // namespace
}  // namespace nsa
