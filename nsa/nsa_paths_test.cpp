// Every path against the per-query reference, on fresh random inputs, over the
// awkward shapes: S < l, S not a block multiple, fewer blocks than n, B > 1.
#include "nsa/nsa_paths.h"

#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

struct PathCase {
  std::string phi;
  int64_t B, S;
};

class PathsAgree : public ::testing::TestWithParam<PathCase> {};

void expect_same(const BranchOutputs& got, const BranchOutputs& ref, double tol, const char* what) {
  SCOPED_TRACE(what);
  for (int b = 0; b < 3; ++b) EXPECT_LE(rel_max_err(got.o[b], ref.o[b]), tol) << "branch " << branch_name(Branch(b));
  ASSERT_TRUE(at::equal(got.block_idx.cpu(), ref.block_idx.cpu())) << "selected blocks differ";
}

TEST_P(PathsAgree, BatchedSequentialAndMaskMatchReferenceInFloat64) {
  auto pc = GetParam();
  uint64_t seed = fresh_seed();
  auto lc = make_case(tiny(pc.phi), pc.B, pc.S, at::kDouble, seed);
  auto pj = project(lc.w, lc.x, lc.cfg);
  auto ref = nsa_reference(pj, lc.w, lc.cfg);
  expect_same(nsa_batched(pj, lc.w, lc.cfg, runtime_with(), 0), ref, 1e-10, "batched pack");
  expect_same(nsa_batched(pj, lc.w, lc.cfg, runtime_with("NSA_USE_SEL_MASK", "1"), 0), ref, 1e-10, "batched mask");
  expect_same(nsa_sequential(pj, lc.w, lc.cfg, runtime_with(), 0), ref, 1e-10, "sequential");
}

TEST_P(PathsAgree, Float32WithinTolerance) {
  auto pc = GetParam();
  auto lc = make_case(tiny(pc.phi), pc.B, pc.S, at::kDouble, fresh_seed());
  auto pj64 = project(lc.w, lc.x, lc.cfg);
  auto ref = nsa_reference(pj64, lc.w, lc.cfg);
  // The same inputs rounded to fp32; selection ties can flip only on exact ties, which random data avoids.
  Projected pj32;
  pj32.q = pj64.q.to(at::kFloat);
  for (int b = 0; b < 3; ++b) pj32.k[b] = pj64.k[b].to(at::kFloat), pj32.v[b] = pj64.v[b].to(at::kFloat);
  NsaWeights w32 = lc.w;
  for (auto* phi : {&w32.phi_k, &w32.phi_v})
    if (phi->pe.defined()) {
      phi->pe = phi->pe.to(at::kFloat), phi->w1 = phi->w1.to(at::kFloat), phi->b1 = phi->b1.to(at::kFloat);
      phi->w2 = phi->w2.to(at::kFloat), phi->b2 = phi->b2.to(at::kFloat);
    }
  auto got = nsa_batched(pj32, w32, lc.cfg, runtime_with(), 0);
  for (int b = 0; b < 3; ++b) EXPECT_LE(rel_max_err(got.o[b], ref.o[b]), 1e-5) << branch_name(Branch(b));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PathsAgree,
                         ::testing::Values(PathCase{"mlp", 1, 1}, PathCase{"mlp", 1, 5}, PathCase{"mlp", 2, 7},
                                           PathCase{"mlp", 2, 20}, PathCase{"mlp", 1, 64}, PathCase{"mlp", 2, 107},
                                           PathCase{"mean", 1, 130}, PathCase{"mean", 2, 33}),
                         [](const auto& info) {
                           return info.param.phi + "_B" + std::to_string(info.param.B) + "_S" +
                                  std::to_string(info.param.S);
                         });

TEST(DecodeStep, TokenByTokenEqualsBatchedAtEveryPosition) {
  auto lc = make_case(tiny(), 2, 45, at::kDouble, fresh_seed());
  auto pj = project(lc.w, lc.x, lc.cfg);
  auto batched = nsa_batched(pj, lc.w, lc.cfg, runtime_with(), 0);
  DecodeCache cache;
  auto rt = runtime_with();
  for (int64_t t = 0; t < 45; ++t) {
    SCOPED_TRACE("t=" + std::to_string(t));
    at::Tensor k[3], v[3];
    for (int b = 0; b < 3; ++b) k[b] = pj.k[b].select(1, t), v[b] = pj.v[b].select(1, t);
    auto r = decode_step(cache, pj.q.select(1, t), k, v, lc.w, lc.cfg, rt);
    for (int b = 0; b < 3; ++b) ASSERT_LE(rel_max_err(r.o[b], batched.o[b].select(1, t)), 1e-10);
    ASSERT_TRUE(at::equal(r.block_idx, batched.block_idx.select(1, t)));
  }
  // One compressed block per d tokens once the first l are in: ⌊(S−l)/d⌋+1.
  EXPECT_EQ(static_cast<int64_t>(cache.kc.size()), (45 - 8) / 4 + 1);
}

}  // namespace
}  // namespace nsa
