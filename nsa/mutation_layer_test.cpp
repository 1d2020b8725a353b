// The mutation self-test's own check: every mutation in the registry really
// changes what the NSA layer computes (tiny config, S = 100), on the path it is
// planted in, and stays finite. A mutation that changed nothing could never be
// caught, and its "MISSED" would say nothing about the tests. This binary is
// the one place beside `nsa-harness selftest --mutations` that reads the
// registry; the model's tests (nsa_model_test) never do.
#include <map>

#include "nsa/mutations.h"
#include "nsa/nsa_layer.h"
#include "nsa/test_support.h"

namespace nsa {
namespace {
using namespace nsa::testing;

struct MaskGuard {
  uint64_t saved = mutations.mask();
  ~MaskGuard() { mutations.set_mask(saved); }
};

Path path_for(MutationSite site) { return site == MutationSite::sequential ? Path::sequential : Path::batched; }

TEST(Mutations, EachChangesTheLayer) {
  MaskGuard guard;
  // Two inputs: random weights, where scores never tie, and the same layer with
  // W_Q = 0, where every query attends uniformly and block scores tie exactly
  // (the only way a tie-breaking slip can show).
  auto random = make_case(tiny(), 1, 100, at::kDouble, 20260101);
  auto uniform = random;
  uniform.w.wq = at::zeros_like(random.w.wq);
  auto rt = runtime_with();
  at::NoGradGuard ng;
  mutations.set_mask(0);
  std::map<std::pair<Path, const LayerCase*>, at::Tensor> clean;
  for (auto path : {Path::batched, Path::sequential})
    for (auto* lc : {&random, &uniform}) clean[{path, lc}] = nsa_attention(lc->w, lc->x, lc->cfg, rt, 0, path);
  for (auto& m : mutations.rows()) {
    SCOPED_TRACE(std::string(m.name));
    const Path path = path_for(m.site);
    double change = 0;
    for (const LayerCase* lc : {&random, &uniform}) {
      mutations.set_mask(uint64_t{1} << static_cast<uint32_t>(m.id));
      auto mutated = nsa_attention(lc->w, lc->x, lc->cfg, rt, 0, path);
      ASSERT_TRUE(at::isfinite(mutated).all().item<bool>()) << "a mutation must be a quiet bug, not a NaN";
      change = std::max(change, rel_max_err(mutated, clean[{path, lc}]));
    }
    EXPECT_GT(change, 1e-6) << "on the " << path_name(path) << " path";
  }
}

}  // namespace
}  // namespace nsa
