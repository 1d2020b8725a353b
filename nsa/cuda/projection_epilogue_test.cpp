// The projection epilogue kernel against a float64 oracle written here from
// RoPE's definition (not nsa::apply_rope): forward for every part, backward
// through float64 autograd of that oracle with some gradients undefined, and
// project() and the dense cell on a GPU going through the kernel (project()
// honouring the two RoPE mutations).
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/core/grad_mode.h>

#include "nsa/config.h"
#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/projection_epilogue.h"
#include "nsa/cuda/test_util.h"
#include "nsa/dense_attention.h"
#include "nsa/mutations.h"
#include "nsa/nsa_weights.h"

namespace nsa::cuda {
namespace {
using testing::expect_close;
using testing::tolerance_for;
using testing::PoisonScope;

// Pair (i, i + dim/2) of every head at position pos turns by θ = pos · base^(−2i/dim):
// (x1, x2) → (x1 cos θ − x2 sin θ, x2 cos θ + x1 sin θ). x: float64 [B,S,N,dim].
at::Tensor rope64(const at::Tensor& x, int64_t pos0, double base) {
  const int64_t S = x.size(1), dim = x.size(3), half = dim / 2;
  const auto o = x.options();
  const at::Tensor i = at::arange(half, o), pos = at::arange(S, o) + double(pos0);
  const at::Tensor theta = pos.unsqueeze(1) * at::pow(base, -2.0 * i / double(dim)).unsqueeze(0);  // [S, half]
  const at::Tensor c = theta.cos().view({1, S, 1, half}), s = theta.sin().view({1, S, 1, half});
  const at::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  return at::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

// The parts of y64 [B,S,width] by the layout's definition, rotated as flagged.
std::vector<at::Tensor> oracle(const at::Tensor& y64, const ProjectionSplit& s, int64_t pos0) {
  const int64_t B = y64.size(0), S = y64.size(1);
  std::vector<at::Tensor> out;
  int64_t col = 0;
  auto take = [&](int64_t heads, int64_t dim) {
    at::Tensor t = y64.narrow(-1, col, heads * dim).reshape({B, S, heads, dim});
    col += heads * dim;
    return t;
  };
  out.push_back(rope64(take(s.n_heads, s.d_k), pos0, s.rope_base));
  for (int b = 0; b < s.n_kv; ++b) {
    at::Tensor k = take(s.n_groups, s.d_k);
    out.push_back(s.rotate_k[b] ? rope64(k, pos0, s.rope_base) : k);
  }
  for (int b = 0; b < s.n_kv; ++b) out.push_back(take(s.n_groups, s.d_v));
  return out;
}

std::string part_name(const ProjectionSplit& s, size_t j) {
  if (j == 0) return "q";
  const bool is_v = int(j) > s.n_kv;
  return std::string(is_v ? "v" : "k") + std::to_string(is_v ? int(j) - 1 - s.n_kv : int(j) - 1);
}

struct Case {
  std::string name;
  int64_t B, S, H, G, dk, dv;
  int n_kv;
  std::array<bool, 3> rotate_k;
  int64_t pos0;
  bool misaligned = false;  // y starts one element past an aligned address: the scalar path
};

const Case kCases[] = {
    {"m7c_like", 2, 37, 12, 2, 64, 64, 3, {true, true, true}, 0},
    {"one_token_decode", 1, 1, 12, 2, 64, 64, 3, {true, true, true}, 2047},
    {"slc_keys_unrotated_pos0", 2, 37, 6, 3, 32, 32, 3, {true, false, true}, 5},
    {"dense_layout_dk_ne_dv", 3, 19, 4, 1, 32, 48, 1, {true, true, true}, 3},
    {"scalar_path_odd_dims", 2, 23, 3, 1, 6, 5, 3, {false, true, true}, 1},
    {"scalar_path_misaligned", 2, 37, 12, 2, 64, 64, 3, {true, true, true}, 7, true},
};

ProjectionSplit split_of(const Case& c) {
  ProjectionSplit s;
  s.n_heads = c.H, s.n_groups = c.G, s.d_k = c.dk, s.d_v = c.dv, s.n_kv = c.n_kv, s.rotate_k = c.rotate_k;
  s.rope_base = 10000.0;
  return s;
}

// y [B,S,width] in `dt` on the GPU (values O(1)), optionally at an odd address.
at::Tensor make_y(const Case& c, const ProjectionSplit& s, at::ScalarType dt, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t n = c.B * c.S * s.width();
  at::Tensor flat = at::randn({n + 1}, gen).to(at::kCUDA).to(dt);
  return flat.narrow(0, c.misaligned ? 1 : 0, n).view({c.B, c.S, s.width()});
}

TEST(ProjectionEpilogue, ForwardMatchesRopeDefinition) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (const Case& c : kCases)
    for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
      SCOPED_TRACE(c.name + " " + std::string(c10::toString(dt)));
      const ProjectionSplit s = split_of(c);
      const at::Tensor y = make_y(c, s, dt, 11);
      const int64_t launches = projection_epilogue_launches();
      const std::vector<at::Tensor> got = projection_epilogue(y, s, c.pos0);
      EXPECT_EQ(projection_epilogue_launches(), launches + 1);
      const std::vector<at::Tensor> want = oracle(y.cpu().to(at::kDouble), s, c.pos0);
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) {
        EXPECT_TRUE(got[j].is_contiguous()) << part_name(s, j);
        EXPECT_EQ(got[j].sizes(), want[j].sizes()) << part_name(s, j);
        EXPECT_EQ(got[j].scalar_type(), dt) << part_name(s, j);
        expect_close(part_name(s, j), got[j], want[j], tolerance_for(dt));
      }
    }
}

// Each subset: the outputs the loss uses; the others get undefined gradients,
// and their columns of dy must be exactly zero.
TEST(ProjectionEpilogue, BackwardMatchesFloat64AutogradWithUndefinedGradients) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  const std::vector<std::vector<int>> subsets = {{0, 1, 2, 3, 4, 5, 6}, {0, 5}, {3}, {6}};
  for (const Case& c : kCases)
    for (at::ScalarType dt : {at::kFloat, at::kBFloat16})
      for (const auto& used : subsets) {
        const ProjectionSplit s = split_of(c);
        const int n_out = 1 + 2 * s.n_kv;
        std::string trace = c.name + " " + c10::toString(dt) + " used:";
        for (int j : used) trace += " " + (j < n_out ? part_name(s, j) : std::string("-"));
        SCOPED_TRACE(trace);
        const at::Tensor y = make_y(c, s, dt, 23).detach().requires_grad_(true);
        const at::Tensor y64 = y.detach().cpu().to(at::kDouble).requires_grad_(true);
        const std::vector<at::Tensor> got = projection_epilogue(y, s, c.pos0);
        const std::vector<at::Tensor> want = oracle(y64, s, c.pos0);
        at::Tensor loss = at::zeros({}, y.options().dtype(at::kFloat)), loss64 = at::zeros({}, y64.options());
        std::vector<bool> is_used(n_out, false);
        for (int j : used) {
          if (j >= n_out) continue;
          is_used[j] = true;
          const at::Tensor g = at::randn(got[j].sizes(), at::make_generator<at::CPUGeneratorImpl>(100 + j));
          loss = loss + (got[j].to(at::kFloat) * g.to(y.device())).sum();
          loss64 = loss64 + (want[j] * g.to(at::kDouble).to(dt).to(at::kDouble)).sum();
        }
        if (!loss.requires_grad()) continue;  // this layout has none of the subset's outputs
        loss.backward();
        loss64.backward();
        ASSERT_TRUE(y.grad().defined());
        expect_close("dy", y.grad(), y64.grad(), tolerance_for(dt));
        int64_t col = 0;
        for (int j = 0; j < n_out; ++j) {
          const int64_t w = got[j].size(2) * got[j].size(3);
          if (!is_used[j])
            EXPECT_TRUE((y.grad().narrow(-1, col, w) == 0).all().item<bool>())
                << "dy columns of unused " << part_name(s, j) << " are not zero";
          col += w;
        }
      }
}

// With q_copies = 3 the function returns two more handles of q (outputs 7 and
// 8: q's values, their own autograd outputs); backward sums the gradients of
// all three into q's columns of dy. The oracle is float64 autograd of the
// definition with q used three times.
TEST(ProjectionEpilogue, BackwardSumsTheGradientsOfQsHandles) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  const std::vector<std::vector<int>> subsets = {{0, 7, 8}, {7}, {8, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}};
  for (const Case& c : {kCases[0], kCases[4], kCases[5]})
    for (at::ScalarType dt : {at::kFloat, at::kBFloat16})
      for (const auto& used : subsets) {
        ProjectionSplit s = split_of(c);
        s.q_copies = 3;
        std::string trace = c.name + " " + c10::toString(dt) + " used:";
        for (int j : used) trace += " " + std::to_string(j);
        SCOPED_TRACE(trace);
        const at::Tensor y = make_y(c, s, dt, 29).detach().requires_grad_(true);
        const at::Tensor y64 = y.detach().cpu().to(at::kDouble).requires_grad_(true);
        const std::vector<at::Tensor> got = projection_epilogue(y, s, c.pos0);
        ASSERT_EQ(got.size(), 9u);
        for (int j : {7, 8}) {
          EXPECT_TRUE(at::equal(got[j], got[0])) << "handle " << j << " holds other values than q";
          EXPECT_FALSE(got[j].is_same(got[0]));
        }
        const std::vector<at::Tensor> want = oracle(y64, s, c.pos0);
        at::Tensor loss = at::zeros({}, y.options().dtype(at::kFloat)), loss64 = at::zeros({}, y64.options());
        for (int j : used) {
          const at::Tensor g = at::randn(got[j].sizes(), at::make_generator<at::CPUGeneratorImpl>(200 + j));
          loss = loss + (got[j].to(at::kFloat) * g.to(y.device())).sum();
          loss64 = loss64 + (want[j < 7 ? j : 0] * g.to(at::kDouble).to(dt).to(at::kDouble)).sum();
        }
        loss.backward();
        loss64.backward();
        expect_close("dy", y.grad(), y64.grad(), tolerance_for(dt));
      }
}

// project() on a GPU goes through the kernel (the hook is registered) and
// honours both RoPE mutations, each decided on the host.
TEST(ProjectionEpilogue, ProjectHonoursRopeMutationsThroughTheKernel) {
  NSA_REQUIRE_CUDA();
  register_with_layer();
  const ModelConfig c = load_model_config("tiny");
  at::manual_seed(5);
  const NsaWeights w64 = init_nsa_weights(c, at::TensorOptions().dtype(at::kDouble));
  const NsaWeights w = w64.to(at::kCUDA, at::kFloat);
  const int64_t B = 2, S = 37, pos0 = 4;
  const at::Tensor x64 = at::randn({B, S, c.d_model}, at::kDouble), x = x64.to(at::kCUDA).to(at::kFloat);
  const at::Tensor y64 =
      at::matmul(x64, at::cat({w64.wq, w64.wk[0], w64.wk[1], w64.wk[2], w64.wv[0], w64.wv[1], w64.wv[2]}, 1));
  const uint64_t saved = mutations.mask();
  for (const char* m : {"", "rope_position_offset", "rope_skips_slc_keys"}) {
    SCOPED_TRACE(std::string("mutation: ") + (*m ? m : "none"));
    mutations.disable_all();
    mutations.enable({m});
    ProjectionSplit s;
    s.n_heads = c.n_heads, s.n_groups = c.n_kv_groups, s.d_k = c.d_k, s.d_v = c.d_v, s.rope_base = c.rope_base;
    s.rotate_k[1] = std::string(m) != "rope_skips_slc_keys";
    const int64_t rope_pos0 = pos0 + (std::string(m) == "rope_position_offset" ? 1 : 0);
    const std::vector<at::Tensor> want = oracle(y64, s, rope_pos0);
    const int64_t launches = projection_epilogue_launches();
    const Projected pj = project(w, x, c, pos0);
    EXPECT_EQ(projection_epilogue_launches(), launches + 1) << "project() did not run the fused kernel";
    expect_close("q", pj.q, want[0], tolerance_for(at::kFloat));
    for (int b = 0; b < 3; ++b) {
      expect_close("k" + std::to_string(b), pj.k[b], want[1 + b], tolerance_for(at::kFloat));
      expect_close("v" + std::to_string(b), pj.v[b], want[4 + b], tolerance_for(at::kFloat));
    }
  }
  mutations.set_mask(saved);
}

// The dense cell's projection goes through the same kernel on a GPU; its
// output (fp32) matches the CPU path in float64, which dense_attention_test
// checks against a brute force from the definitions.
TEST(ProjectionEpilogue, DenseCellThroughTheKernelMatchesItsCpuPath) {
  NSA_REQUIRE_CUDA();
  register_with_layer();
  ModelConfig c = load_model_config("tiny");
  c.attention = "dense";
  at::manual_seed(6);
  const DenseWeights w64 = init_dense_weights(c, at::TensorOptions().dtype(at::kDouble));
  const auto gpu = [](const at::Tensor& t) { return t.detach().to(at::kCUDA).to(at::kFloat); };
  const DenseWeights w{gpu(w64.wq), gpu(w64.wk), gpu(w64.wv), gpu(w64.wo)};
  const at::Tensor x64 = at::randn({2, 37, c.d_model}, at::kDouble);
  at::NoGradGuard no_grad;
  const at::Tensor want = dense_attention(w64, x64, c);
  const int64_t launches = projection_epilogue_launches();
  const at::Tensor got = dense_attention(w, gpu(x64), c);
  EXPECT_EQ(projection_epilogue_launches(), launches + 1) << "the dense cell did not run the fused kernel";
  expect_close("dense output", got, want, tolerance_for(at::kFloat));
}

}  // namespace
}  // namespace nsa::cuda
