// The delta hand-over (row_delta.h): an offer is taken only by a backward
// called with the very gradient and output it was made for, exactly once, and
// the backward then uses it (a deliberately wrong delta changes dq; the true
// one, summed here in float64, gives the gradients of the backward's own
// delta). In the layer, every branch takes the gate combine's offer.
#include <ATen/ATen.h>

#include "nsa/cuda/layer_routing.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/row_delta.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

TEST(RowDelta, TakenOnlyForTheVeryGradientAndOutputOnce) {
  const at::Tensor dout = at::randn({1, 4, 2, 16}), o = at::randn({1, 4, 2, 16});
  const at::Tensor delta = at::randn({1, 4, 2});
  offer_row_delta(dout, o, delta);
  EXPECT_FALSE(take_row_delta(dout.clone(), o).defined()) << "an equal but other gradient";
  EXPECT_FALSE(take_row_delta(dout, o.clone()).defined()) << "an equal but other output";
  const int64_t taken = row_deltas_taken();
  const at::Tensor got = take_row_delta(dout, o);
  ASSERT_TRUE(got.defined());
  EXPECT_TRUE(got.is_same(delta));
  EXPECT_EQ(row_deltas_taken(), taken + 1);
  EXPECT_FALSE(take_row_delta(dout, o).defined()) << "taken twice";

  // Written in place after the offer (autograd summing a second gradient into
  // it): no longer the gradient the delta was made for.
  at::Tensor d2 = at::randn({1, 4, 2, 16});
  offer_row_delta(d2, o, delta);
  d2.add_(1.0);
  EXPECT_FALSE(take_row_delta(d2, o).defined());
}

TEST(RowDelta, TheBackwardUsesTheOfferedDelta) {
  NSA_REQUIRE_CUDA();
  const auto in = testing::make_inputs(2, 200, 200, 6, 2, 64, 64, at::kBFloat16, 5150);
  BranchSpec spec;
  spec.branch = Branch::Window, spec.window = 48, spec.scale = 0.125;
  const ForwardResult f = attention_forward(in.q, in.k, in.v, spec);
  const Gradients own = attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
  const at::Tensor delta64 = (testing::f64(in.dout) * testing::f64(f.o)).sum(-1);

  offer_row_delta(in.dout, f.o, (delta64 + 1.0).to(at::kFloat).to(at::kCUDA).contiguous());
  const Gradients wrong = attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
  EXPECT_GT((wrong.dq.to(at::kFloat) - own.dq.to(at::kFloat)).abs().max().item<float>(), 1e-2)
      << "a delta off by one left dq as it was: the offer was not used";

  offer_row_delta(in.dout, f.o, delta64.to(at::kFloat).to(at::kCUDA).contiguous());
  const Gradients offered = attention_backward(in.q, in.k, in.v, f.o, f.lse, in.dout, spec);
  // The same delta up to fp32 summation order: the gradients agree to bf16's tolerance.
  const double tol = testing::tolerance_for(at::kBFloat16);
  testing::expect_close("dq", offered.dq, testing::f64(own.dq), tol);
  testing::expect_close("dk", offered.dk, testing::f64(own.dk), tol);
  testing::expect_close("dv", offered.dv, testing::f64(own.dv), tol);
}

}  // namespace
}  // namespace nsa::cuda
