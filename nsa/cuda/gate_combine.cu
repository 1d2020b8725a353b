// The gate combine of the NSA layer (DESIGN.md §2, o = Σ_c g^c ⊙ o^c), one
// memory-bound kernel each way. A row r is one (b, s, h) of [B,S,H,dv]:
//
//   forward   out[r,:]         = Σ_c g[r, col_c] · o_c[r,:]   (fp32 sum, written in o's dtype)
//   backward  d o_c[r,:]       = g[r, col_c] · dO[r,:]        (o's dtype)
//             dg[r, col_c]     = Σ_d dO[r,d] · o_c[r,d]       (fp32, the gates' dtype)
//             delta_c[r]       = Σ_d d o_c[r,d] · o_c[r,d]    (fp32, where asked; d o_c as written)
//
// col is the host's choice of which gate column weights which branch
// (combine_branches; the mutation gate_slc_win_swapped swaps two), passed in.
//
// Why: in ATen the forward is a cast of g, three muls and two adds, each a pass
// over [B,S,H,dv], and the backward per branch dO·g_c, dO·o_c and a sum over dv.
// Here every tensor is read once and every output written once. delta_c is
// the softmax-backward term each attention branch's backward needs
// (rowsum(dO ⊙ O) of its own output and gradient, FlashAttention's
// preprocess): computed here, where both are in registers, it saves each
// branch a pass over [B,S,H,dv] (attention_backward takes it through
// offer_row_delta, row_delta.h).
//
// Layout (both kernels): a row belongs to a group of P lanes of one warp (P a
// power of two, the fewest covering the row's packs, at most 32); lane j of the
// group takes packs j, j+P, … . A pack is 16 bytes (8 bf16, 4 fp32) when dv and
// the pointers allow it, else one element. The backward's sum over dv is a
// shuffle butterfly inside the group: no shared memory, no atomics, a fixed
// order (deterministic).
// The gates are read through their strides: they arrive as the transpose of
// [B,S,3,H], and a contiguous copy would cost a launch; autograd also has to
// keep the caller's tensor to catch an in-place change before backward.
//
// Time: not yet measured on a GPU; `nsa_cuda_bench --benchmark_filter=GateCombine`
// times it against the ATen expression (m7c_125m, one layer). Napkin math at
// m7c_125m (B=8, S=2048, H=12, dv=64, bf16): the forward moves 103 MB and the
// backward 181 MB, ~34 and ~60 us at 3 TB/s; issue #16 measured ATen at ~164 us
// forward and ~330 us backward per layer on an H100.
#include <cstdint>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/gate_combine.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/packs.cuh"

namespace nsa::cuda {
namespace {

constexpr int kThreads = 256;

struct CombineParams {
  const void* o[3];  // [rows, dv] each
  const void* g;     // gate (b,s,h,c) at b·gs[0] + s·gs[1] + h·gs[2] + c·gs[3]
  const void* dout;  // backward: [rows, dv]
  void* out;         // forward: [rows, dv]
  void* d_o[3];      // backward: [rows, dv] each, nullptr where not wanted
  void* dg;          // backward: [rows, 3] contiguous, nullptr where not wanted
  float* delta[3];   // backward: [rows] each, nullptr where not wanted (fp16/bf16/fp32 only)
  int64_t gs[4];
  int64_t rows;
  int S, H, dv, col[3];
  int group, log2_group;  // lanes per row, a power of two
};

// This thread's row and its lane within the row's group (shifts: a 64-bit
// division costs ~70 instructions, a sizeable share of a thread's work here).
__device__ inline void row_and_lane(const CombineParams& p, int64_t* row, int* lane) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  *row = t >> p.log2_group;
  *lane = int(t & (p.group - 1));
}

// The three gates of a row, in branch order (g[c] weights o_c). rows < 2^31
// (checked on the host), so the row splits in 32-bit arithmetic.
template <typename A>
__device__ inline void load_gates(const CombineParams& p, int64_t row, A g[3]) {
  const uint32_t r = uint32_t(row), H = uint32_t(p.H), S = uint32_t(p.S);
  const uint32_t h = r % H, bs = r / H, s = bs % S, b = bs / S;
  const A* gr = static_cast<const A*>(p.g) + b * p.gs[0] + s * p.gs[1] + h * p.gs[2];
#pragma unroll
  for (int c = 0; c < 3; ++c) g[c] = gr[p.col[c] * p.gs[3]];
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_gate_combine_fwd_kernel(CombineParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  int64_t row;
  int lane;
  row_and_lane(p, &row, &lane);
  if (row >= p.rows) return;
  A g[3];
  load_gates(p, row, g);
  const int packs = p.dv / N;
  const int64_t base = row * packs;
  for (int i = lane; i < packs; i += p.group) {
    A acc[N] = {};
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const P x = static_cast<const P*>(p.o[c])[base + i];
#pragma unroll
      for (int j = 0; j < N; ++j) acc[j] += g[c] * A(x.v[j]);
    }
    P y;
#pragma unroll
    for (int j = 0; j < N; ++j) y.v[j] = T(acc[j]);
    static_cast<P*>(p.out)[base + i] = y;
  }
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_gate_combine_bwd_kernel(CombineParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  int64_t row;
  int lane;
  row_and_lane(p, &row, &lane);
  // A lane past the last row stays: the shuffles below need the whole warp.
  const bool valid = row < p.rows;
  A g[3], dot[3] = {}, ddot[3] = {};
  const bool any_delta = p.delta[0] || p.delta[1] || p.delta[2];
  if (valid) {
    load_gates(p, row, g);
    const int packs = p.dv / N;
    const int64_t base = row * packs;
    for (int i = lane; i < packs; i += p.group) {
      const P d = static_cast<const P*>(p.dout)[base + i];
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const bool read_o = p.dg || p.delta[c];
        P x{};
        if (read_o) x = static_cast<const P*>(p.o[c])[base + i];
        if (p.d_o[c]) {
          P y;
#pragma unroll
          for (int j = 0; j < N; ++j) y.v[j] = T(g[c] * A(d.v[j]));
          static_cast<P*>(p.d_o[c])[base + i] = y;
          if (p.delta[c]) {
#pragma unroll
            for (int j = 0; j < N; ++j) ddot[c] += A(y.v[j]) * A(x.v[j]);  // the gradient as the branch reads it
          }
        }
        if (p.dg) {
#pragma unroll
          for (int j = 0; j < N; ++j) dot[c] += A(d.v[j]) * A(x.v[j]);
        }
      }
    }
  }
  if (!p.dg && !any_delta) return;  // the same for every thread
  // Butterfly over the group's lanes (an xor by less than the group size stays inside it).
  for (int off = p.group / 2; off > 0; off /= 2)
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      dot[c] += __shfl_xor_sync(0xffffffffu, dot[c], off);
      ddot[c] += __shfl_xor_sync(0xffffffffu, ddot[c], off);
    }
  if (valid && lane == 0) {
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      if (p.dg) static_cast<A*>(p.dg)[row * 3 + p.col[c]] = dot[c];
      if (p.delta[c]) p.delta[c][row] = float(ddot[c]);
    }
  }
}

// ---- host -------------------------------------------------------------------

// Checks the inputs every launch shares and fills the params but the pointers
// of the direction.
CombineParams common_params(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols) {
  TORCH_CHECK(o[0].dim() == 4, "gate_combine: o must be [B,S,H,dv], got ", o[0].sizes());
  for (int c = 0; c < 3; ++c) {
    TORCH_CHECK(o[c].is_cuda() && o[c].device() == o[0].device(), "gate_combine: o[", c, "] not on ", o[0].device());
    TORCH_CHECK(o[c].sizes() == o[0].sizes() && o[c].scalar_type() == o[0].scalar_type(), "gate_combine: o[", c,
                "] is ", o[c].sizes(), " ", o[c].scalar_type(), ", o[0] ", o[0].sizes(), " ", o[0].scalar_type());
    TORCH_CHECK(o[c].is_contiguous(), "gate_combine: o[", c, "] must be contiguous");
  }
  const auto B = o[0].size(0), S = o[0].size(1), H = o[0].size(2);
  TORCH_CHECK(gates.device() == o[0].device() && gates.sizes() == at::IntArrayRef({B, S, H, 3}),
              "gate_combine: gates must be [B,S,H,3] = [", B, ",", S, ",", H, ",3] on ", o[0].device(), ", got ",
              gates.sizes(), " on ", gates.device());
  TORCH_CHECK(gates.scalar_type() == at::toOpMathType(o[0].scalar_type()), "gate_combine: gates must be ",
              at::toOpMathType(o[0].scalar_type()), " for o in ", o[0].scalar_type(), ", got ", gates.scalar_type());
  bool seen[3] = {false, false, false};
  for (int64_t c : cols) {
    TORCH_CHECK(c >= 0 && c < 3 && !seen[c], "gate_combine: cols must be a permutation of {0,1,2}, got {", cols[0],
                ",", cols[1], ",", cols[2], "}");
    seen[c] = true;
  }
  CombineParams p{};
  for (int c = 0; c < 3; ++c) p.o[c] = o[c].data_ptr(), p.col[c] = int(cols[c]);
  p.g = gates.data_ptr();
  for (int d = 0; d < 4; ++d) p.gs[d] = gates.stride(d);
  p.rows = B * S * H;
  TORCH_CHECK(p.rows < (int64_t(1) << 31), "gate_combine: B*S*H = ", p.rows, " rows, the kernels take < 2^31");
  p.S = int(S), p.H = int(H), p.dv = int(o[0].size(3));
  return p;
}

// Picks the pack (16 bytes when dv and every pointer allow it, else 1 element)
// and the group, and launches Kernel<T, N> for the dtype.
template <template <typename, int> class KernelFor>
void launch(at::ScalarType dtype, CombineParams& p, std::initializer_list<const void*> ptrs) {
  if (p.rows == 0 || p.dv == 0) return;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "gate_combine", [&] {
    constexpr int kPack = 16 / sizeof(scalar_t);
    const bool vec = pack_for<scalar_t>(p.dv, ptrs) == kPack;
    const int packs = vec ? p.dv / kPack : p.dv;
    p.group = 1, p.log2_group = 0;
    while (p.group < packs && p.group < 32) p.group *= 2, ++p.log2_group;
    const int64_t blocks = (p.rows * p.group + kThreads - 1) / kThreads;
    auto kernel = vec ? KernelFor<scalar_t, kPack>::get() : KernelFor<scalar_t, 1>::get();
    kernel<<<dim3(unsigned(blocks)), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

template <typename T, int N>
struct Fwd {
  static auto get() { return &nsa_gate_combine_fwd_kernel<T, N>; }
};
template <typename T, int N>
struct Bwd {
  static auto get() { return &nsa_gate_combine_bwd_kernel<T, N>; }
};

}  // namespace

at::Tensor gate_combine_forward(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols) {
  CombineParams p = common_params(o, gates, cols);
  const c10::cuda::CUDAGuard guard(o[0].device());
  at::Tensor out = new_output(o[0].sizes(), o[0].options());
  p.out = out.data_ptr();
  launch<Fwd>(o[0].scalar_type(), p, {p.o[0], p.o[1], p.o[2], p.out});
  return out;
}

GateCombineGrads gate_combine_backward(const at::Tensor& dout, const at::Tensor (&o)[3], const at::Tensor& gates,
                                       const GateColumns& cols, const std::array<bool, 3>& want_d_o, bool want_dg,
                                       bool want_delta) {
  CombineParams p = common_params(o, gates, cols);
  TORCH_CHECK(dout.sizes() == o[0].sizes() && dout.scalar_type() == o[0].scalar_type() && dout.is_contiguous() &&
                  dout.device() == o[0].device(),
              "gate_combine: dout must be contiguous ", o[0].sizes(), " ", o[0].scalar_type(), ", got ",
              dout.sizes(), " ", dout.scalar_type());
  const c10::cuda::CUDAGuard guard(o[0].device());
  GateCombineGrads r;
  for (int c = 0; c < 3; ++c) {
    if (!want_d_o[c]) continue;
    r.d_o[c] = new_output(o[0].sizes(), o[0].options());
    p.d_o[c] = r.d_o[c].data_ptr();
    // fp32 rows sums, as the attention kernels (fp16/bf16/fp32 inputs) read them.
    if (want_delta && o[0].scalar_type() != at::kDouble) {
      r.delta[c] = new_output({o[0].size(0), o[0].size(1), o[0].size(2)}, o[0].options().dtype(at::kFloat));
      p.delta[c] = r.delta[c].data_ptr<float>();
    }
  }
  if (want_dg) {
    r.dg = new_output(gates.sizes(), gates.options());
    p.dg = r.dg.data_ptr();
  }
  p.dout = dout.data_ptr();
  if (want_dg || want_d_o[0] || want_d_o[1] || want_d_o[2])
    launch<Bwd>(o[0].scalar_type(), p, {p.o[0], p.o[1], p.o[2], p.dout, p.d_o[0], p.d_o[1], p.d_o[2]});
  return r;
}

}  // namespace nsa::cuda
