// SwiGLU, the MLP's activation (swiglu.h has the formulas), one memory-bound
// kernel each way.
//
// Why: in ATen the MLP's activation is silu(x·W_gate) · (x·W_up): forward a
// silu kernel and a mul, each a pass over [rows, F], and the silu output kept
// for backward; backward two muls and silu's own backward kernel, plus the sum
// of the two GEMMs' input gradients. Here the gate and up projections are one
// GEMM whose output gu [rows, 2F] this kernel reads once: forward reads 2F and
// writes F per row, backward reads F + 2F and writes 2F into one tensor, which
// one GEMM then takes back to the input (no sum of two gradients).
//
// Layout: thread t takes pack t of the [rows, F] output, a pack being 16 bytes
// (8 bf16/fp16, 4 fp32, 2 fp64) when F and the pointers allow it, else one
// element; its gate is at (row, i) of gu and its up value F columns further.
#include <cstdint>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/packs.cuh"
#include "nsa/cuda/swiglu.h"

namespace nsa::cuda {
namespace {

constexpr int kThreads = 256;

struct SwigluParams {
  const void* gu;    // [rows, 2F]
  const void* dout;  // backward: [rows, F]
  void* out;         // forward: [rows, F]; backward: dgu [rows, 2F]
  int64_t packs;     // rows · F / N
  int64_t row_packs; // F / N
};

// σ(g) in the accumulation type; exp(-g) overflows to inf for g < -88 (fp32),
// which gives σ = 0 and silu = -0, the limits, never NaN.
template <typename A>
__device__ inline A sigmoid(A g) {
  return A(1) / (A(1) + exp(-g));
}

// This thread's pack t of the [rows, F] output: its row and its index i in
// the row. False past the last pack.
__device__ inline bool output_pack(const SwigluParams& p, int64_t* t, int64_t* row, int64_t* i) {
  *t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  *row = *t / p.row_packs;
  *i = *t - *row * p.row_packs;
  return *t < p.packs;
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_swiglu_fwd_kernel(SwigluParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  int64_t t, row, i;
  if (!output_pack(p, &t, &row, &i)) return;
  const P* gu = static_cast<const P*>(p.gu) + row * 2 * p.row_packs;
  const P g = gu[i], u = gu[p.row_packs + i];
  P y;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const A gj = A(g.v[j]);
    y.v[j] = T(gj * sigmoid(gj) * A(u.v[j]));
  }
  static_cast<P*>(p.out)[t] = y;
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_swiglu_bwd_kernel(SwigluParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  int64_t t, row, i;
  if (!output_pack(p, &t, &row, &i)) return;
  const int64_t at_gate = row * 2 * p.row_packs + i, at_up = at_gate + p.row_packs;
  const P* gu = static_cast<const P*>(p.gu);
  const P g = gu[at_gate], u = gu[at_up], d = static_cast<const P*>(p.dout)[t];
  P dg, du;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const A gj = A(g.v[j]), dj = A(d.v[j]), s = sigmoid(gj);
    du.v[j] = T(dj * gj * s);
    dg.v[j] = T(dj * A(u.v[j]) * s * (A(1) + gj * (A(1) - s)));
  }
  P* dgu = static_cast<P*>(p.out);
  dgu[at_gate] = dg;
  dgu[at_up] = du;
}

// ---- host -------------------------------------------------------------------

int64_t half_width(const at::Tensor& gu) {
  TORCH_CHECK(gu.is_cuda() && gu.dim() >= 1, "swiglu: gu must be a CUDA tensor [..., 2F], got ", gu.sizes(), " on ",
              gu.device());
  TORCH_CHECK(gu.size(-1) % 2 == 0, "swiglu: gu's last dim must be 2F (gate | up), got ", gu.size(-1));
  TORCH_CHECK(gu.is_contiguous(), "swiglu: gu must be contiguous");
  return gu.size(-1) / 2;
}

// Picks the pack (16 bytes when F and every pointer allow it, else one element)
// and launches KernelFor<T, N> for the dtype.
template <template <typename, int> class KernelFor>
void launch(at::ScalarType dtype, int64_t rows, int64_t F, SwigluParams& p) {
  if (rows == 0 || F == 0) return;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "swiglu", [&] {
    constexpr int kPack = 16 / sizeof(scalar_t);
    const bool vec = pack_for<scalar_t>(F, {p.gu, p.out, p.dout}) == kPack;
    p.row_packs = vec ? F / kPack : F;
    p.packs = rows * p.row_packs;
    const int64_t blocks = (p.packs + kThreads - 1) / kThreads;
    TORCH_CHECK(blocks < (int64_t(1) << 31), "swiglu: ", rows, " rows of ", F, " are too many for one launch");
    auto kernel = vec ? KernelFor<scalar_t, kPack>::get() : KernelFor<scalar_t, 1>::get();
    kernel<<<dim3(unsigned(blocks)), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

template <typename T, int N>
struct Fwd {
  static auto get() { return &nsa_swiglu_fwd_kernel<T, N>; }
};
template <typename T, int N>
struct Bwd {
  static auto get() { return &nsa_swiglu_bwd_kernel<T, N>; }
};

}  // namespace

at::Tensor swiglu_forward(const at::Tensor& gu) {
  const int64_t F = half_width(gu);
  const c10::cuda::CUDAGuard guard(gu.device());
  std::vector<int64_t> sizes = gu.sizes().vec();
  sizes.back() = F;
  at::Tensor out = new_output(sizes, gu.options());
  SwigluParams p{};
  p.gu = gu.data_ptr();
  p.out = out.data_ptr();
  launch<Fwd>(gu.scalar_type(), F == 0 ? 0 : gu.numel() / (2 * F), F, p);
  return out;
}

at::Tensor swiglu_backward(const at::Tensor& dout, const at::Tensor& gu) {
  const int64_t F = half_width(gu);
  std::vector<int64_t> want = gu.sizes().vec();
  want.back() = F;
  TORCH_CHECK(dout.device() == gu.device() && dout.scalar_type() == gu.scalar_type() && dout.is_contiguous() &&
                  dout.sizes() == at::IntArrayRef(want),
              "swiglu: dout must be contiguous ", at::IntArrayRef(want), " ", gu.scalar_type(), " on ", gu.device(),
              ", got ", dout.sizes(), " ", dout.scalar_type(), " on ", dout.device());
  const c10::cuda::CUDAGuard guard(gu.device());
  at::Tensor dgu = new_output(gu.sizes(), gu.options());
  SwigluParams p{};
  p.gu = gu.data_ptr();
  p.dout = dout.data_ptr();
  p.out = dgu.data_ptr();
  launch<Bwd>(gu.scalar_type(), F == 0 ? 0 : gu.numel() / (2 * F), F, p);
  return dgu;
}

}  // namespace nsa::cuda
