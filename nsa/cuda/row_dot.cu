// delta = rowsum(dO ⊙ O) in fp32: the softmax-backward term of every (query,
// head) row, which the dq and dk/dv kernels read (FlashAttention's "preprocess").
// One warp per row: the lanes stride over the row's dv elements (consecutive
// lanes read consecutive elements, so each warp load is one coalesced segment),
// multiply in fp32 and reduce with shuffles. Memory-bound: it reads both
// tensors once. ATen's `(dO.float() * O.float()).sum(-1)` made two fp32 copies,
// a product and a reduction (four kernels, ~190 µs a branch for m7c_125m at
// S=2048 on an H100, ~7 ms of its training step).
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <type_traits>

#include "nsa/cuda/attention_kernels.h"

namespace nsa::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void row_dot_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ out,
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
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "row_dot", [&] {
    row_dot_kernel<scalar_t><<<grid, kWarpsPerBlock * 32, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<float>(), rows, int(dim));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace nsa::cuda
