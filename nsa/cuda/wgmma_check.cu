// Test-only: see wgmma_check.h.
#include "nsa/cuda/wgmma_check.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "nsa/cuda/wgmma.cuh"

namespace nsa::cuda::testing {
namespace {

template <typename T>
__device__ void store_rows(float* out, const float (&acc)[8][4], int warp, int gid, int tig) {
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int c = 8 * n + 2 * tig;
    out[(16 * warp + gid) * 64 + c] = acc[n][0];
    out[(16 * warp + gid) * 64 + c + 1] = acc[n][1];
    out[(16 * warp + gid + 8) * 64 + c] = acc[n][2];
    out[(16 * warp + gid + 8) * 64 + c + 1] = acc[n][3];
  }
}

template <typename T>
__global__ void __launch_bounds__(128) wgmma_tiles_kernel(const T* a, const T* bk, const T* bv, float* s_out,
                                                          float* o_out) {
  __shared__ __align__(128) T kt[64 * 64];
  __shared__ __align__(128) T vt[64 * 64];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gid = lane / 4, tig = lane % 4;
  for (int e = tid; e < 64 * 8; e += 128) {
    const int r = e / 8, c = e % 8;
    *reinterpret_cast<uint4*>(kt + wg::core_offset<64>(r, c)) = *reinterpret_cast<const uint4*>(bk + r * 64 + c * 8);
    *reinterpret_cast<uint4*>(vt + wg::core_offset<64>(r, c)) = *reinterpret_cast<const uint4*>(bv + r * 64 + c * 8);
  }
  wg::fence_proxy_async();
  __syncthreads();
  uint32_t af[4][4];
  tc::load_a_frags<T, 64>(af, a + (16 * warp + gid) * 64, true, a + (16 * warp + gid + 8) * 64, true, tig);
  float s[8][4];
  wg::warpgroup_a_bt<T, 64>(s, af, kt);
  store_rows<T>(s_out, s, warp, gid, tig);
  float o[8][4];
#pragma unroll
  for (int n = 0; n < 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  wg::warpgroup_c_b<T, 64>(o, s, vt);
  store_rows<T>(o_out, o, warp, gid, tig);
}

}  // namespace

std::pair<at::Tensor, at::Tensor> wgmma_tiles(const at::Tensor& a, const at::Tensor& bk, const at::Tensor& bv) {
  TORCH_CHECK(a.is_cuda() && a.sizes() == at::IntArrayRef({64, 64}) && bk.sizes() == a.sizes() &&
                  bv.sizes() == a.sizes() && a.is_contiguous() && bk.is_contiguous() && bv.is_contiguous(),
              "wgmma_tiles: three contiguous [64, 64] CUDA tensors");
  at::Tensor s = at::empty({64, 64}, a.options().dtype(at::kFloat));
  at::Tensor o = at::empty({64, 64}, a.options().dtype(at::kFloat));
  const auto stream = at::cuda::getCurrentCUDAStream();
  if (a.scalar_type() == at::kBFloat16) {
    using T = c10::BFloat16;
    wgmma_tiles_kernel<T><<<1, 128, 0, stream>>>(a.data_ptr<T>(), bk.data_ptr<T>(), bv.data_ptr<T>(),
                                                 s.data_ptr<float>(), o.data_ptr<float>());
  } else {
    TORCH_CHECK(a.scalar_type() == at::kHalf, "wgmma_tiles: bf16 or fp16");
    using T = c10::Half;
    wgmma_tiles_kernel<T><<<1, 128, 0, stream>>>(a.data_ptr<T>(), bk.data_ptr<T>(), bv.data_ptr<T>(),
                                                 s.data_ptr<float>(), o.data_ptr<float>());
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {s, o};
}

}  // namespace nsa::cuda::testing
