// The residual add and the RMSNorm after it (add_rms_norm.h has the formulas),
// one memory-bound kernel each way.
//
// Why: in ATen, x + delta is one pass over the residual stream and RMSNorm a
// second (its fused kernel reads the sum back); in backward, autograd sums the
// two gradients the stream receives (from the next residual add and through
// the norm) in a third pass, and the fp32 norm weight is cast to the compute
// dtype and its gradient back in two more small kernels per norm. Here the
// forward reads x and delta once and writes s and h; the backward reads s, dh
// and ds_out once and writes the one gradient x and delta share.
//
// Layout: one warp per row; lane l takes packs l, l+32, … of the row, a pack
// being 16 bytes (8 bf16/fp16, 4 fp32, 2 fp64) when D and the pointers allow,
// else one element. Row sums are warp butterflies (fixed order). The weight
// gradient Σ_r dh·ŝ is accumulated per warp in shared memory (each lane owns
// its packs' columns: no atomics), the warps of a CTA summed in warp order
// into one fp32 row per CTA, and those rows summed by ATen in CTA order: the
// same bits on every run of a given GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "nsa/cuda/add_rms_norm.h"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/packs.cuh"

namespace nsa::cuda {
namespace {

constexpr int kWarps = 4;  // rows in flight per CTA
constexpr int kThreads = 32 * kWarps;
constexpr int kCtasPerSm = 8;              // backward grid: enough warps in flight to hide memory latency
constexpr size_t kDefaultSharedBytes = 48 << 10;  // more needs the kernel's opt-in

template <typename A>
__device__ inline A warp_sum(A v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

struct FwdParams {
  const void *x, *delta;
  const void* w;  // [D], the compute dtype (opmath)
  void *s, *h;
  void* rstd;     // [rows], opmath
  int64_t rows;
  int D;
  double eps;
};

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_add_rms_norm_fwd_kernel(FwdParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= p.rows) return;  // the whole warp: rows are warp-uniform
  const int packs = p.D / N;
  const P* x = static_cast<const P*>(p.x) + row * packs;
  const P* d = static_cast<const P*>(p.delta) + row * packs;
  P* s = static_cast<P*>(p.s) + row * packs;
  P* h = static_cast<P*>(p.h) + row * packs;
  const A* w = static_cast<const A*>(p.w);
  // Pass 1: the residual stream, rounded as it is stored, and its square sum.
  A sq = 0;
  for (int i = lane; i < packs; i += 32) {
    const P xv = x[i], dv = d[i];
    P sv;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      sv.v[j] = T(A(xv.v[j]) + A(dv.v[j]));
      const A r = A(sv.v[j]);
      sq += r * r;
    }
    s[i] = sv;
  }
  const A rstd = A(1) / sqrt(warp_sum(sq) / A(p.D) + A(p.eps));
  if (lane == 0) static_cast<A*>(p.rstd)[row] = rstd;
  // Pass 2: the norm, from this lane's own stores (L1).
  for (int i = lane; i < packs; i += 32) {
    const P sv = s[i];
    P hv;
#pragma unroll
    for (int j = 0; j < N; ++j) hv.v[j] = T(A(sv.v[j]) * rstd * w[i * N + j]);
    h[i] = hv;
  }
}

struct BwdParams {
  const void *ds_out, *dh;  // [rows, D]; nullptr: no gradient (zero)
  const void *s, *w, *rstd;
  void* ds;                 // [rows, D]
  void* dw_part;            // [gridDim.x, D], opmath
  int64_t rows;
  int D;
};

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) nsa_add_rms_norm_bwd_kernel(BwdParams p) {
  using A = at::opmath_type<T>;
  using P = Pack<T, N>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int packs = p.D / N;
  // This warp's dw accumulators, element j of pack i at j·packs + i: a warp's
  // lanes touch consecutive words (no bank conflicts).
  A* acc = reinterpret_cast<A*>(smem_raw) + warp * p.D;
  for (int i = lane; i < packs; i += 32)
#pragma unroll
    for (int j = 0; j < N; ++j) acc[j * packs + i] = 0;
  const A* w = static_cast<const A*>(p.w);
  for (int64_t row = int64_t(blockIdx.x) * kWarps + warp; row < p.rows; row += int64_t(gridDim.x) * kWarps) {
    const P* s = static_cast<const P*>(p.s) + row * packs;
    const P* dh = p.dh ? static_cast<const P*>(p.dh) + row * packs : nullptr;
    const P* dso = p.ds_out ? static_cast<const P*>(p.ds_out) + row * packs : nullptr;
    P* ds = static_cast<P*>(p.ds) + row * packs;
    const A rstd = static_cast<const A*>(p.rstd)[row];
    // Pass 1: mean_i g_i ŝ_i, g = dh · w.
    A dot = 0;
    if (dh)
      for (int i = lane; i < packs; i += 32) {
        const P sv = s[i], gv = dh[i];
#pragma unroll
        for (int j = 0; j < N; ++j) dot += A(gv.v[j]) * w[i * N + j] * A(sv.v[j]) * rstd;
      }
    const A c = warp_sum(dot) / A(p.D);
    // Pass 2: ds = ds_out + ρ (g − ŝ c); dw += dh ŝ.
    for (int i = lane; i < packs; i += 32) {
      const P sv = s[i];
      P gv, ov, out;
      if (dh) gv = dh[i];
      if (dso) ov = dso[i];
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const A shat = A(sv.v[j]) * rstd;
        A v = dso ? A(ov.v[j]) : A(0);
        if (dh) {
          const A g = A(gv.v[j]);
          v += rstd * (g * w[i * N + j] - shat * c);
          acc[j * packs + i] += g * shat;
        }
        out.v[j] = T(v);
      }
      ds[i] = out;
    }
  }
  __syncthreads();
  // The CTA's warps summed in warp order, one row of dw partials per CTA.
  A* part = static_cast<A*>(p.dw_part) + int64_t(blockIdx.x) * p.D;
  const A* all = reinterpret_cast<const A*>(smem_raw);
  for (int q = threadIdx.x; q < p.D; q += kThreads) {
    A sum = 0;
    for (int k = 0; k < kWarps; ++k) sum += all[k * p.D + q];
    const int i = q % packs, j = q / packs;  // slot q holds element j of pack i
    part[i * N + j] = sum;
  }
}

// ---- host -------------------------------------------------------------------

size_t bwd_shared_bytes(at::ScalarType t, int64_t D) {
  return size_t(kWarps) * size_t(D) * (t == at::kDouble ? sizeof(double) : sizeof(float));
}

void check_rows(const at::Tensor& t, const at::Tensor& like, const char* name) {
  TORCH_CHECK(t.device() == like.device() && t.scalar_type() == like.scalar_type() && t.sizes() == like.sizes() &&
                  t.is_contiguous(),
              "add_rms_norm: ", name, " must be contiguous ", like.sizes(), " ", like.scalar_type(), " on ",
              like.device(), ", got ", t.sizes(), " ", t.scalar_type(), " on ", t.device());
}

void check_weight(const at::Tensor& w, const at::Tensor& x) {
  const int64_t D = x.size(-1);
  TORCH_CHECK(w.device() == x.device() && w.dim() == 1 && w.size(0) == D && w.is_contiguous() &&
                  w.scalar_type() == at::toOpMathType(x.scalar_type()),
              "add_rms_norm: weight must be contiguous [", D, "] ", at::toOpMathType(x.scalar_type()), " on ",
              x.device(), ", got ", w.sizes(), " ", w.scalar_type(), " on ", w.device());
}

}  // namespace

const char* add_rms_norm_declines(const at::Tensor& x) {
  if (!x.is_cuda()) return "not a CUDA tensor";
  if (x.dim() < 1 || x.size(-1) == 0) return "no feature dimension";
  if (bwd_shared_bytes(x.scalar_type(), x.size(-1)) > size_t(at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin))
    return "D too large for the backward's per-warp weight-gradient rows in one CTA's shared memory";
  if (x.numel() / x.size(-1) >= (int64_t(1) << 31) / kWarps) return "too many rows for one launch";
  return "";
}

AddRmsNormOut add_rms_norm_forward(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                   double eps) {
  TORCH_CHECK(std::string(add_rms_norm_declines(x)).empty(), "add_rms_norm: ", add_rms_norm_declines(x));
  TORCH_CHECK(x.is_contiguous(), "add_rms_norm: x must be contiguous");
  check_rows(delta, x, "delta");
  check_weight(weight, x);
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t D = x.size(-1), rows = x.numel() / D;
  AddRmsNormOut out;
  out.s = new_output(x.sizes(), x.options());
  out.h = new_output(x.sizes(), x.options());
  out.rstd = new_output({rows}, x.options().dtype(at::toOpMathType(x.scalar_type())));
  if (rows == 0) return out;
  FwdParams p{x.data_ptr(), delta.data_ptr(), weight.data_ptr(), out.s.data_ptr(), out.h.data_ptr(),
              out.rstd.data_ptr(), rows, int(D), eps};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "add_rms_norm", [&] {
    constexpr int kPack = 16 / sizeof(scalar_t);
    const bool vec = pack_for<scalar_t>(D, {p.x, p.delta, p.s, p.h}) == kPack;
    auto kernel = vec ? &nsa_add_rms_norm_fwd_kernel<scalar_t, kPack> : &nsa_add_rms_norm_fwd_kernel<scalar_t, 1>;
    const int64_t blocks = (rows + kWarps - 1) / kWarps;
    kernel<<<dim3(unsigned(blocks)), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

AddRmsNormGrads add_rms_norm_backward(const at::Tensor& ds_out, const at::Tensor& dh, const at::Tensor& s,
                                      const at::Tensor& weight, const at::Tensor& rstd) {
  TORCH_CHECK(std::string(add_rms_norm_declines(s)).empty(), "add_rms_norm: ", add_rms_norm_declines(s));
  TORCH_CHECK(s.is_contiguous(), "add_rms_norm: s must be contiguous");
  if (ds_out.defined()) check_rows(ds_out, s, "ds_out");
  if (dh.defined()) check_rows(dh, s, "dh");
  check_weight(weight, s);
  const int64_t D = s.size(-1), rows = s.numel() / D;
  TORCH_CHECK(rstd.sizes() == at::IntArrayRef({rows}) && rstd.scalar_type() == weight.scalar_type(),
              "add_rms_norm: rstd must be [", rows, "] ", weight.scalar_type());
  const c10::cuda::CUDAGuard guard(s.device());
  AddRmsNormGrads g;
  g.ds = new_output(s.sizes(), s.options());
  if (rows == 0) {
    g.dw = at::zeros_like(weight);
    return g;
  }
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t blocks = std::min<int64_t>((rows + kWarps - 1) / kWarps, int64_t(sms) * kCtasPerSm);
  const at::Tensor part = at::empty({blocks, D}, weight.options());
  BwdParams p{ds_out.defined() ? ds_out.data_ptr() : nullptr,
              dh.defined() ? dh.data_ptr() : nullptr,
              s.data_ptr(),
              weight.data_ptr(),
              rstd.data_ptr(),
              g.ds.data_ptr(),
              part.data_ptr(),
              rows,
              int(D)};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, s.scalar_type(), "add_rms_norm_backward", [&] {
    constexpr int kPack = 16 / sizeof(scalar_t);
    const bool vec = pack_for<scalar_t>(D, {p.ds_out, p.dh, p.s, p.ds}) == kPack;
    auto kernel = vec ? &nsa_add_rms_norm_bwd_kernel<scalar_t, kPack> : &nsa_add_rms_norm_bwd_kernel<scalar_t, 1>;
    const size_t smem = bwd_shared_bytes(s.scalar_type(), D);
    if (smem > kDefaultSharedBytes)
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<dim3(unsigned(blocks)), kThreads, smem, at::cuda::getCurrentCUDAStream()>>>(p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  g.dw = part.sum(0);  // CTA rows in order: ATen's reduction over a fixed shape
  return g;
}

}  // namespace nsa::cuda
