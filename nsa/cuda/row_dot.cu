// delta = rowsum(dO ⊙ O) in fp32: the softmax-backward term of every (query,
// head) row, which the dq and dk/dv kernels read (FlashAttention's "preprocess").
// One warp per row: the lanes stride over the row's dv elements (consecutive
// lanes read consecutive elements, so each warp load is one coalesced segment),
// multiply in fp32 and reduce with shuffles. Memory-bound: it reads both
// tensors once. ATen's `(dO.float() * O.float()).sum(-1)` made two fp32 copies,
// a product and a reduction (four kernels, ~190 µs a branch for m7c_125m at
// S=2048 on an H100, ~7 ms of its training step).
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>
#include <type_traits>

#include "nsa/cuda/attention_kernels.h"

namespace nsa::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void nsa_row_dot_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ out,
                               int64_t rows, int dim) {
  // double stays double until the final store (the fp64 parity tests); the rest in fp32.
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const T* ra = a + row * dim;
  const T* rb = b + row * dim;
  Acc s = 0;
  for (int i = lane; i < dim; i += 32) s += Acc(ra[i]) * Acc(rb[i]);
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) out[row] = float(s);
}

// 16-bit rows of dim = 8·LANES elements (64, 128, 256): LANES lanes per row,
// one 16-byte load of 8 elements each from both tensors, 32 / LANES rows per
// warp; the shuffles stay within a row's lanes. Twice the generic kernel's
// speed at dim 64, where its lanes read 2-byte elements.
template <typename T, int LANES>
__global__ void nsa_row_dot_vec_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ out,
                                   int64_t rows) {
  constexpr int kRowsPerWarp = 32 / LANES;
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32) * kRowsPerWarp + lane / LANES;
  float s = 0.f;
  if (row < rows) {
    const int64_t off = row * (8 * LANES) + (lane % LANES) * 8;
    const uint4 va = *reinterpret_cast<const uint4*>(a + off);
    const uint4 vb = *reinterpret_cast<const uint4*>(b + off);
    const T* ea = reinterpret_cast<const T*>(&va);
    const T* eb = reinterpret_cast<const T*>(&vb);
#pragma unroll
    for (int i = 0; i < 8; ++i) s += float(ea[i]) * float(eb[i]);
  }
  for (int off = LANES / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (row < rows && lane % LANES == 0) out[row] = s;
}

template <typename T>
bool launch_vec(const T* a, const T* b, float* out, int64_t rows, int64_t dim, cudaStream_t stream) {
  const auto go = [&](auto lanes) {
    constexpr int L = decltype(lanes)::value;
    constexpr int64_t kRowsPerBlock = int64_t(kWarpsPerBlock) * (32 / L);
    nsa_row_dot_vec_kernel<T, L><<<unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock), kWarpsPerBlock * 32, 0, stream>>>(
        a, b, out, rows);
    return true;
  };
  const bool aligned = reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  if (!aligned) return false;
  switch (dim) {
    case 64: return go(std::integral_constant<int, 8>{});
    case 128: return go(std::integral_constant<int, 16>{});
    case 256: return go(std::integral_constant<int, 32>{});
    default: return false;
  }
}

}  // namespace

at::Tensor row_dot_fp32(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type(), "row_dot: operands differ: ",
              a.sizes(), " ", a.scalar_type(), " vs ", b.sizes(), " ", b.scalar_type());
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && a.dim() >= 1, "row_dot: operands must be contiguous");
  const int64_t dim = a.size(-1), rows = dim == 0 ? 0 : a.numel() / dim;
  auto sizes = a.sizes().vec();
  sizes.pop_back();
  at::Tensor out = at::empty(sizes, a.options().dtype(at::kFloat));  // every row is written
  if (rows == 0 || dim == 0) return out;
  const dim3 grid(unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "row_dot", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    bool done = false;
    if constexpr (sizeof(scalar_t) == 2) done = launch_vec(pa, pb, out.data_ptr<float>(), rows, dim, stream);
    if (!done)
      nsa_row_dot_kernel<scalar_t><<<grid, kWarpsPerBlock * 32, 0, stream>>>(pa, pb, out.data_ptr<float>(), rows, int(dim));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace nsa::cuda
