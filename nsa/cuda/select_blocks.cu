// Top-n selection-block choice from compressed attention scores (DESIGN.md §2,
// Eq. 9-10), entirely on the GPU: no host round trip, no S x S matrix.
//
// Versions: v2 (select_blocks_tc.cu: tensor cores, fp16/bf16, dk in {64, 128,
// 192}) where it tiles, else this v1 (also whenever force_v1_kernels() is on).
// v1: one CTA per (b, t, g):
//   for each head of the group (in order):
//     s_i = scale * q.kc_i for the visible compressed blocks i < n_cmp(t)
//     p_i = exp(s_i - max) / sum                 (fp32 softmax)
//     score[j] += sum over i overlapping block j, ascending i, of p_i
//   forced blocks (0, t/l', t/l' - 1) get +inf; then n rounds of a block-wide
//   argmax (higher score first, ties -> lower index) among candidates j*l' <= t;
//   the chosen indices are written sorted ascending, -1 padding at the end.
// Why this shape: each block's score is summed by one thread in a fixed order,
// so equal contributions give bitwise-equal scores and ties resolve exactly as
// the reference does (ref_select_blocks sums in the same order).
// Shared memory: (S_cmp + n_blocks + dk) floats.
#include <atomic>

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "nsa/cuda/attention_common.cuh"
#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/nsa_cuda.h"

namespace nsa::cuda {
namespace {

struct SelectParams {
  const void* q;
  const void* kc;
  int* out;  // [B,S,G,n_sel]
  int B, S, S_cmp, H, G, h, dk, n_blocks, n_sel;
  int cmp_block, cmp_stride, sel_block;
  float scale;
};

// Block-wide reductions over kThreads threads; `red` holds 32 floats/ints.
__device__ float block_max(float x, float* red) {
  x = warp_max(x);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
  __syncthreads();
  float r = -INFINITY;
  for (int w = 0; w < int(blockDim.x / 32); ++w) r = fmaxf(r, red[w]);
  __syncthreads();
  return r;
}
__device__ float block_sum(float x, float* red) {
  x = warp_sum(x);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
  __syncthreads();
  float r = 0.f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) r += red[w];  // fixed order
  __syncthreads();
  return r;
}
// (score, index) a beats b: higher score, then lower index; index -1 never wins.
__device__ bool beats(float sa, int ia, float sb, int ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  return sa > sb || (sa == sb && ia < ib);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) nsa_select_blocks_kernel(SelectParams p) {
  extern __shared__ float smem[];
  float* ps = smem;                 // [S_cmp] scores, then probabilities, of one head
  float* score = ps + p.S_cmp;      // [n_blocks]
  float* qv = score + p.n_blocks;   // [dk]
  __shared__ float red_f[32];
  __shared__ int red_i[32];
  __shared__ int chosen[64 * 4];    // n_sel <= 256 (checked by the launcher)

  const T* q = static_cast<const T*>(p.q);
  const T* kc = static_cast<const T*>(p.kc);
  const int tid = threadIdx.x;
  const int t = blockIdx.x, b = blockIdx.y / p.G, g = blockIdx.y % p.G;
  const int nc = imin(n_cmp_visible(t, p.cmp_block, p.cmp_stride), p.S_cmp);
  const int n_cand = imin(t / p.sel_block + 1, p.n_blocks);

  for (int j = tid; j < n_cand; j += blockDim.x) score[j] = 0.f;
  __syncthreads();  // the head loop may not run (nc == 0): order the zeros before the forced +inf
  for (int head = 0; head < p.h && nc > 0; ++head) {
    const int hq = g * p.h + head;
    for (int d = tid; d < p.dk; d += blockDim.x) qv[d] = to_f(q[row_offset(b, t, hq, p.S, p.H, p.dk) + d]);
    __syncthreads();
    float mx = -INFINITY;
    for (int i = tid; i < nc; i += blockDim.x) {
      const T* kr = kc + row_offset(b, i, g, p.S_cmp, p.G, p.dk);
      float s = 0.f;
      for (int d = 0; d < p.dk; ++d) s += qv[d] * to_f(kr[d]);
      s *= p.scale;
      ps[i] = s;
      mx = fmaxf(mx, s);
    }
    mx = block_max(mx, red_f);
    float part = 0.f;
    for (int i = tid; i < nc; i += blockDim.x) part += expf(ps[i] - mx);
    const float den = block_sum(part, red_f);
    for (int i = tid; i < nc; i += blockDim.x) ps[i] = expf(ps[i] - mx) / den;
    __syncthreads();
    for (int j = tid; j < n_cand; j += blockDim.x) {
      const int lo = overlap_lo(j, p.cmp_block, p.cmp_stride, p.sel_block);
      const int hi = imin(overlap_hi(j, p.cmp_stride, p.sel_block), nc);
      float acc = 0.f;
      for (int i = lo; i < hi; ++i) acc += ps[i];
      score[j] += acc;
    }
    __syncthreads();
  }
  // Forced blocks outrank every scored one.
  if (tid == 0) {
    const int local = t / p.sel_block;
    score[0] = INFINITY;
    if (local < n_cand) score[local] = INFINITY;
    if (local - 1 >= 0 && local - 1 < n_cand) score[local - 1] = INFINITY;
  }
  __syncthreads();

  const int picks = imin(p.n_sel, n_cand);
  for (int round = 0; round < picks; ++round) {
    float bs = -INFINITY;
    int bi = -1;
    for (int j = tid; j < n_cand; j += blockDim.x)
      if (score[j] != -INFINITY && beats(score[j], j, bs, bi)) bs = score[j], bi = j;
    for (int off = 16; off > 0; off >>= 1) {
      const float os = __shfl_xor_sync(0xffffffffu, bs, off);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, off);
      if (beats(os, oi, bs, bi)) bs = os, bi = oi;
    }
    if (tid % 32 == 0) red_f[tid / 32] = bs, red_i[tid / 32] = bi;
    __syncthreads();
    if (tid == 0) {
      for (int w = 1; w < int(blockDim.x / 32); ++w)
        if (beats(red_f[w], red_i[w], bs, bi)) bs = red_f[w], bi = red_i[w];
      chosen[round] = bi;
      if (bi >= 0) score[bi] = -INFINITY;  // taken
    }
    __syncthreads();
  }
  if (tid == 0) {  // insertion sort of <= n_sel entries, -1 last
    for (int a = 1; a < picks; ++a) {
      const int x = chosen[a];
      int c = a - 1;
      while (c >= 0 && (x >= 0 && (chosen[c] < 0 || chosen[c] > x))) chosen[c + 1] = chosen[c], --c;
      chosen[c + 1] = x;
    }
  }
  __syncthreads();
  int* out = p.out + ((int64_t(b) * p.S + t) * p.G + g) * p.n_sel;
  for (int s = tid; s < p.n_sel; s += blockDim.x) out[s] = s < picks ? chosen[s] : -1;
}

std::atomic<int> g_last_select_version{0};

}  // namespace

// select_blocks_tc.cu: false when v2 does not tile this call (dtype, dk, h, S).
bool launch_select_blocks_tc(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& cmp_lse,
                             at::Tensor& out, int cmp_block, int cmp_stride, int sel_block, int n_sel,
                             float scale);

// Testing hook: the version (1 or 2) of the last select_blocks kernel launched (0 before the first).
int last_select_blocks_kernel_version() { return g_last_select_version.load(); }

at::Tensor select_blocks(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                         int64_t cmp_stride, int64_t sel_block, int64_t n_sel, double scale,
                         const at::Tensor& cmp_lse) {
  TORCH_CHECK(q.is_cuda() && kc.is_cuda(), "select_blocks: q and kc must be CUDA tensors");
  TORCH_CHECK(q.dim() == 4 && kc.dim() == 4, "select_blocks: q [B,S,H,dk], kc [B,S_cmp,G,dk] expected, got ",
              q.sizes(), " and ", kc.sizes());
  TORCH_CHECK(q.is_contiguous() && kc.is_contiguous(), "select_blocks: q and kc must be contiguous");
  TORCH_CHECK(q.scalar_type() == kc.scalar_type(), "select_blocks: q and kc dtypes differ");
  TORCH_CHECK(q.size(0) == kc.size(0) && q.size(3) == kc.size(3), "select_blocks: q ", q.sizes(),
              " and kc ", kc.sizes(), " disagree on B or dk");
  TORCH_CHECK(cmp_block > 0 && cmp_stride > 0 && sel_block > 0 && n_sel > 0 && n_sel <= 256,
              "select_blocks: need l, d, l' > 0 and 0 < n <= 256");
  const int64_t G = kc.size(2), H = q.size(2);
  TORCH_CHECK(G > 0 && H % G == 0, "select_blocks: H=", H, " not a multiple of G=", G);
  TORCH_CHECK(!cmp_lse.defined() || (cmp_lse.is_cuda() && cmp_lse.scalar_type() == at::kFloat &&
                                     cmp_lse.is_contiguous() && cmp_lse.sizes() == q.sizes().slice(0, 3)),
              "select_blocks: cmp_lse must be a contiguous CUDA float32 [B,S,H] tensor");
  c10::cuda::CUDAGuard guard(q.device());

  SelectParams p{};
  p.q = q.data_ptr();
  p.kc = kc.data_ptr();
  p.B = int(q.size(0));
  p.S = int(q.size(1));
  p.S_cmp = int(kc.size(1));
  p.H = int(H);
  p.G = int(G);
  p.h = int(H / G);
  p.dk = int(q.size(3));
  p.n_blocks = ceil_div(p.S, int(sel_block));
  p.n_sel = int(n_sel);
  p.cmp_block = int(cmp_block);
  p.cmp_stride = int(cmp_stride);
  p.sel_block = int(sel_block);
  p.scale = float(scale);
  auto out = poison_outputs() ? at::full({q.size(0), q.size(1), G, n_sel}, -2, q.options().dtype(at::kInt))
                              : at::empty({q.size(0), q.size(1), G, n_sel}, q.options().dtype(at::kInt));
  p.out = out.data_ptr<int>();
  if (out.numel() == 0) return out;
  if (!force_v1_kernels() && launch_select_blocks_tc(q, kc, cmp_lse, out, p.cmp_block, p.cmp_stride, p.sel_block,
                                                     p.n_sel, p.scale)) {
    g_last_select_version.store(2);
    return out;
  }
  g_last_select_version.store(1);

  const size_t smem = size_t(p.S_cmp + p.n_blocks + p.dk) * sizeof(float);
  int device = 0, smem_optin = 0;
  NSA_CUDA_CHECK(cudaGetDevice(&device));
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TORCH_CHECK(smem + 2 * 1024 <= size_t(smem_optin), "select_blocks: S=", p.S, " needs ", smem,
              " bytes of shared memory, the device allows ", smem_optin);
  const dim3 grid(p.S, p.B * p.G);
  NSA_DISPATCH_FLOAT_TYPES(q.scalar_type(), "select_blocks", [&] {
    auto kernel = nsa_select_blocks_kernel<scalar_t>;
    NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, kThreads, smem, at::cuda::getCurrentCUDAStream()>>>(p);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

}  // namespace nsa::cuda
