// The gate combine (gate_combine.h) against a float64 oracle written here from
// the formula o[b,s,h,:] = Σ_c g[b,s,h,cols[c]] · o_c[b,s,h,:] (not from
// combine_branches), forward and through autograd; and the layer's combine
// going through it with the columns the mutation gate_slc_win_swapped picks.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nsa/cuda/gate_combine.h"
#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/test_util.h"
#include "nsa/mutations.h"
#include "nsa/nsa_ops.h"

namespace nsa::cuda {
namespace {
using testing::expect_close;
using testing::f64;
using testing::tolerance_for;
using testing::PoisonScope;

struct Shape {
  int64_t B, S, H, dv;
};
// S = 1, S = 37 (rows not a multiple of a block), H = 1, dv = 128; dv = 72 (9
// bf16 packs: idle lanes in a group of 16), dv = 20 and 3 (no 16-byte packs).
const std::vector<Shape> kShapes = {{2, 37, 3, 64}, {1, 1, 12, 64}, {2, 5, 1, 128},
                                    {1, 9, 3, 72},  {1, 37, 2, 20}, {3, 2, 2, 3}};
const GateColumns kColumns[] = {{0, 1, 2}, {0, 2, 1}};  // as combine_branches picks them, mutation off / on

std::string describe(const Shape& s, at::ScalarType dt, const GateColumns& cols) {
  return "B=" + std::to_string(s.B) + " S=" + std::to_string(s.S) + " H=" + std::to_string(s.H) +
         " dv=" + std::to_string(s.dv) + " " + std::string(c10::toString(dt)) + " cols={" +
         std::to_string(cols[0]) + "," + std::to_string(cols[1]) + "," + std::to_string(cols[2]) + "}";
}

// The formula, in whatever dtype its inputs have (float64 for the oracle).
at::Tensor oracle(const at::Tensor (&o)[3], const at::Tensor& g, const GateColumns& cols) {
  at::Tensor out = at::zeros_like(o[0]);
  for (int c = 0; c < 3; ++c) out = out + g.select(-1, cols[c]).unsqueeze(-1) * o[c];
  return out;
}

struct Inputs {
  at::Tensor o[3], dout;  // CUDA, the case's dtype
  at::Tensor g_base;      // [B,S,3,H] float32 in (0,1), as the gate MLP's sigmoid gives it
  at::Tensor gates() const { return g_base.transpose(2, 3); }  // [B,S,H,3], as the layer passes it
};
Inputs make_inputs(const Shape& s, at::ScalarType dt, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto mk = [&](at::IntArrayRef sizes) { return at::randn(sizes, gen).to(at::kCUDA).to(dt); };
  Inputs in;
  for (auto& o : in.o) o = mk({s.B, s.S, s.H, s.dv});
  in.dout = mk({s.B, s.S, s.H, s.dv});
  in.g_base = at::rand({s.B, s.S, 3, s.H}, gen).to(at::kCUDA);
  return in;
}
TEST(GateCombine, ForwardMatchesTheFormula) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kFloat, at::kHalf})
    for (const Shape& s : kShapes)
      for (const GateColumns& cols : kColumns) {
        SCOPED_TRACE(describe(s, dt, cols));
        const Inputs in = make_inputs(s, dt, 11);
        const at::Tensor got = gate_combine(in.o, in.gates(), cols);
        EXPECT_EQ(got.scalar_type(), dt);
        const at::Tensor o64[3] = {f64(in.o[0]), f64(in.o[1]), f64(in.o[2])};
        expect_close("out", got, oracle(o64, f64(in.gates()), cols), tolerance_for(dt));
      }
}

// Which inputs require grad: {o0, o1, o2, gates}.
const std::vector<std::array<bool, 4>> kRequires = {
    {true, true, true, true}, {false, false, false, true}, {false, true, false, false}, {true, false, true, false}};

// Runs the combine on leaves that require grad as `req` says and back-propagates
// dout; returns the leaves (their .grad()).
struct Leaves {
  at::Tensor o[3], g_base;
};
Leaves run_backward(const Inputs& in, const std::array<bool, 4>& req, const GateColumns& cols, bool reference) {
  const auto leaf = [&](const at::Tensor& t, bool r) {
    return (reference ? f64(t) : t.detach().clone()).requires_grad_(r);
  };
  Leaves l;
  for (int c = 0; c < 3; ++c) l.o[c] = leaf(in.o[c], req[c]);
  l.g_base = leaf(in.g_base, req[3]);
  const at::Tensor g = l.g_base.transpose(2, 3);
  const at::Tensor y = reference ? oracle(l.o, g, cols) : gate_combine(l.o, g, cols);
  y.backward(reference ? f64(in.dout) : in.dout);
  return l;
}

TEST(GateCombine, BackwardMatchesAutogradOfTheFormula) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kFloat})
    for (const Shape& s : kShapes)
      for (const GateColumns& cols : kColumns)
        for (const auto& req : kRequires) {
          SCOPED_TRACE(describe(s, dt, cols) + " requires_grad={" + std::to_string(req[0]) +
                       std::to_string(req[1]) + std::to_string(req[2]) + std::to_string(req[3]) + "}");
          const Inputs in = make_inputs(s, dt, 23);
          const Leaves got = run_backward(in, req, cols, false), ref = run_backward(in, req, cols, true);
          for (int c = 0; c < 3; ++c) {
            const std::string name = "d o_" + std::to_string(c);
            if (!req[c]) {
              EXPECT_FALSE(got.o[c].grad().defined()) << name << " computed for an input without grad";
              continue;
            }
            EXPECT_EQ(got.o[c].grad().scalar_type(), dt) << name;
            expect_close(name, got.o[c].grad(), ref.o[c].grad(), tolerance_for(dt));
          }
          if (!req[3]) {
            EXPECT_FALSE(got.g_base.grad().defined()) << "d gates computed for gates without grad";
            continue;
          }
          EXPECT_EQ(got.g_base.grad().scalar_type(), at::kFloat) << "d gates";
          // Products of the same rounded inputs summed in fp32: fp32's tolerance, whatever o's dtype.
          expect_close("d gates", got.g_base.grad(), ref.g_base.grad(), tolerance_for(at::kFloat));
        }
}

// The backward's delta_c = rowsum(d o_c ⊙ o_c): the float64 sum of the
// products of the gradient it wrote (rounded to o's dtype, as the attention
// backward reads it) and o_c, for the branches whose gradient is wanted.
TEST(GateCombine, BackwardSumsEachBranchsGradientTimesItsOutput) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  for (at::ScalarType dt : {at::kBFloat16, at::kHalf, at::kFloat})
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(describe(s, dt, kColumns[1]));
      const Inputs in = make_inputs(s, dt, 31);
      const at::Tensor gates = in.gates().contiguous();
      const GateCombineGrads g =
          gate_combine_backward(in.dout, in.o, gates, kColumns[1], {true, false, true}, true, /*want_delta=*/true);
      EXPECT_FALSE(g.delta[1].defined()) << "delta for a branch whose gradient was not wanted";
      for (int c : {0, 2}) {
        ASSERT_TRUE(g.delta[c].defined());
        EXPECT_EQ(g.delta[c].scalar_type(), at::kFloat);
        EXPECT_EQ(g.delta[c].sizes(), at::IntArrayRef({s.B, s.S, s.H}));
        const at::Tensor want = (f64(g.d_o[c]) * f64(in.o[c])).sum(-1);
        // fp32 sums of dv products: fp32's tolerance whatever o's dtype.
        expect_close("delta_" + std::to_string(c), g.delta[c], want, tolerance_for(at::kFloat));
      }
    }
}

TEST(GateCombine, ReadsGatesThroughTheirStrides) {
  NSA_REQUIRE_CUDA();
  PoisonScope poison;
  const Shape s{2, 7, 3, 64};
  const GateColumns cols{0, 2, 1};
  const Inputs in = make_inputs(s, at::kBFloat16, 5);
  const auto f = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  const std::vector<std::pair<std::string, at::Tensor>> layouts = {
      {"contiguous", at::rand({s.B, s.S, s.H, 3}, f)},
      {"transpose of [B,S,3,H]", at::rand({s.B, s.S, 3, s.H}, f).transpose(2, 3)},
      {"every other position", at::rand({s.B, 2 * s.S, s.H, 3}, f).slice(1, 0, 2 * s.S, 2)},
      {"permuted [3,H,S,B]", at::rand({3, s.H, s.S, s.B}, f).permute({3, 2, 1, 0})},
  };
  const at::Tensor o64[3] = {f64(in.o[0]), f64(in.o[1]), f64(in.o[2])};
  for (const auto& [name, g] : layouts) {
    SCOPED_TRACE(name);
    const at::Tensor gl = g.detach().requires_grad_(true);
    const at::Tensor y = gate_combine(in.o, gl, cols);
    y.backward(in.dout);
    const at::Tensor gr = f64(g).requires_grad_(true);
    oracle(o64, gr, cols).backward(f64(in.dout));
    expect_close("out", y, oracle(o64, f64(g), cols), tolerance_for(at::kBFloat16));
    expect_close("d gates", gl.grad(), gr.grad(), tolerance_for(at::kFloat));
  }
}

// The layer's fault inplace_saved_buffer passes the gates through a workspace
// that the next layer overwrites: backward must refuse the changed tensor.
TEST(GateCombine, AnInPlaceChangeOfTheSavedGatesIsCaught) {
  NSA_REQUIRE_CUDA();
  const Inputs in = make_inputs({1, 4, 2, 64}, at::kFloat, 3);
  const at::Tensor g = in.g_base.clone().requires_grad_(true).transpose(2, 3);
  at::Tensor workspace = at::empty_like(g);
  workspace.copy_(g);
  const at::Tensor y = gate_combine(in.o, workspace, {0, 1, 2});
  workspace.copy_(g * 0.5);
  try {
    y.backward(in.dout);
    ADD_FAILURE() << "backward used gates changed in place after forward";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
  }
}

// combine_branches on CUDA goes through the registered kernel (bitwise: the
// kernel is deterministic) with the columns the mutation picks, then W_O.
TEST(GateCombine, TheLayerCombinesThroughTheKernelWithTheMutationsColumns) {
  NSA_REQUIRE_CUDA();
  register_with_layer();
  const uint64_t saved = mutations.mask();
  const Shape s{2, 9, 3, 64};
  const Inputs in = make_inputs(s, at::kFloat, 7);
  NsaWeights w;
  w.wo = at::randn({s.H * s.dv, 32}, at::TensorOptions().device(at::kCUDA));
  BranchOutputs b;
  for (int c = 0; c < 3; ++c) b.o[c] = in.o[c];
  const at::Tensor o64[3] = {f64(in.o[0]), f64(in.o[1]), f64(in.o[2])};
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "gate_slc_win_swapped on" : "mutations off");
    mutations.set_mask(swapped ? uint64_t{1} << static_cast<uint32_t>(Mutation::gate_slc_win_swapped) : 0);
    const GateColumns cols = swapped ? GateColumns{0, 2, 1} : GateColumns{0, 1, 2};
    const at::Tensor y = combine_branches(b, in.gates(), w);
    const at::Tensor ref = at::matmul(oracle(o64, f64(in.gates()), cols).flatten(2), f64(w.wo));
    expect_close("layer output", y, ref, tolerance_for(at::kFloat));
    EXPECT_TRUE(at::equal(y, at::matmul(gate_combine(b.o, in.gates(), cols).flatten(2), w.wo)))
        << "combine_branches did not run the registered gate combine";
  }
  mutations.set_mask(saved);
}

}  // namespace
}  // namespace nsa::cuda
