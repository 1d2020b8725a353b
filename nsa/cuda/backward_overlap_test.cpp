// attention_backward with dk/dv on a second stream (set_stream_overlap):
// the gradients must be the bits the one-stream order gives, eagerly and from
// a captured CUDA graph, for every branch. The oracle is the one-stream run,
// whose kernels the branch tests check against float64; what is under test
// here is only the fork and the join. Outputs start poisoned (NaN), so a
// gradient read before its stream finished shows.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/test_util.h"

namespace nsa::cuda {
namespace {

struct OverlapScope : testing::SettingScope<bool> {
  explicit OverlapScope(bool on) : SettingScope(stream_overlap, set_stream_overlap, on) {}
};

struct BranchCase {
  BranchSpec spec;
  at::Tensor k, v;  // the compressed branch reads compressed keys
};

std::vector<BranchCase> every_branch(const testing::AttnInputs& in) {
  std::vector<BranchCase> out(3);
  out[0].spec.branch = Branch::Window, out[0].spec.window = 48;
  out[1].spec.branch = Branch::Compressed, out[1].spec.cmp_block = 16, out[1].spec.cmp_stride = 8;
  out[2].spec.branch = Branch::Selected, out[2].spec.sel_block = 32;
  out[2].spec.block_idx = testing::random_block_idx(in.q.size(0), in.q.size(1), in.k.size(2), 4, 32, 77);
  for (auto& c : out) {
    c.spec.scale = 0.125;
    c.k = in.k, c.v = in.v;
  }
  // Compressed keys: (S - l) / d + 1 of them.
  const int64_t n_cmp = (in.k.size(1) - 16) / 8 + 1;
  out[1].k = in.k.narrow(1, 0, n_cmp).contiguous(), out[1].v = in.v.narrow(1, 0, n_cmp).contiguous();
  return out;
}

void expect_same(const Gradients& got, const Gradients& want, const char* what) {
  EXPECT_TRUE(at::equal(got.dq, want.dq)) << what << ": dq";
  EXPECT_TRUE(at::equal(got.dk, want.dk)) << what << ": dk";
  EXPECT_TRUE(at::equal(got.dv, want.dv)) << what << ": dv";
}

TEST(BackwardOverlap, EveryBranchGivesTheOneStreamBitsEagerAndReplayed) {
  NSA_REQUIRE_CUDA();
  testing::PoisonScope poison;
  const auto in = testing::make_inputs(2, 700, 700, 12, 2, 64, 64, at::kBFloat16, 4100);
  for (const BranchCase& c : every_branch(in)) {
    SCOPED_TRACE(static_cast<int>(c.spec.branch));
    const ForwardResult f = attention_forward(in.q, c.k, c.v, c.spec);
    Gradients one_stream, overlapped;
    {
      OverlapScope off(false);
      one_stream = attention_backward(in.q, c.k, c.v, f.o, f.lse, in.dout, c.spec);
    }
    OverlapScope on(true);
    overlapped = attention_backward(in.q, c.k, c.v, f.o, f.lse, in.dout, c.spec);
    ASSERT_TRUE(at::isfinite(one_stream.dq).all().item<bool>() && at::isfinite(one_stream.dk).all().item<bool>() &&
                at::isfinite(one_stream.dv).all().item<bool>());
    expect_same(overlapped, one_stream, "eager");

    if (!testing::capture_possible()) continue;  // no capture without the caching allocator
    at::cuda::CUDAGraph graph;
    Gradients captured;
    {
      c10::cuda::CUDAStreamGuard capturing(c10::cuda::getStreamFromPool());
      graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      captured = attention_backward(in.q, c.k, c.v, f.o, f.lse, in.dout, c.spec);
      graph.capture_end();
    }
    // Captured, not run: the outputs hold nothing until the replay.
    graph.replay();
    expect_same(captured, one_stream, "replayed");
  }
}

}  // namespace
}  // namespace nsa::cuda
