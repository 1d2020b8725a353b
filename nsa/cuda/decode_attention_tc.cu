// v2 of the decode partial kernel (decode_attention.cu lists the versions):
// tensor cores for fp16/bf16, same slots, same outputs as v1.
//
// One CTA = one (b, g, head chunk, slot), 4 warps. Decode has a single query, so
// the M=16 rows of mma.m16n8k16 are the (up to) 16 query heads of the group,
// which share every K/V row: one K/V read serves the whole group (the paper's
// group-centric loading). Each warp owns its own tiles of 16 keys (tile w, w+4,
// ...), copies them with cp.async into its private shared memory, two stages
// (the next tile's copy in flight while this one computes: at batch 1 each
// copy is a round trip to memory on the step's critical path), and keeps its
// own online softmax; the 4 warps merge through shared memory at the end.
//   S[16 x 16] = Q K^T : two n8 tiles x dk/16 k-steps, Q and K fragments read as
//                        32-bit words from shared memory.
//   P = exp(S - m)     : the S accumulators of the two n8 tiles are, element for
//                        element, the A fragment of P [16 heads x 16 keys].
//   O += P V           : V [16 keys][dv] row-major is the B operand stored
//                        k-major, read transposed by ldmatrix.trans.
// fp32 accumulators and softmax; P is rounded to the input dtype for the P V
// product (as flash attention does).
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>

#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/decode_kernels.cuh"
#include "nsa/cuda/mma_tile.cuh"

namespace nsa::cuda {
namespace decode {
namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kKeys = 16;  // keys per warp tile: one k16 step of P V
constexpr int kStages = 2;  // K/V tiles per warp in shared memory

// Shared memory (bytes): Q [16][dk+8]; per warp two stages of K [16][dk+8] and
// V [16][dv+8] (16-bit: the copy of a warp's next tile is in flight while it
// computes this one), reused after the key loop as fp32 O [4 warps][16][dv];
// then row max and sum [4 warps][16] x 2. The +8-element pad puts consecutive
// rows 16 bytes apart modulo 128, so the 8 rows a quarter-warp touches
// (fragment words, ldmatrix rows) land on distinct banks.
size_t q_bytes(int dk) { return size_t(16) * (dk + 8) * 2; }
size_t tiles_bytes(int dk, int dv) {
  return std::max(size_t(kWarps) * kStages * kKeys * (dk + 8 + dv + 8) * 2,
                  size_t(kWarps) * 16 * dv * sizeof(float));
}
size_t smem_bytes(int dk, int dv) { return q_bytes(dk) + tiles_bytes(dk, dv) + 2 * kWarps * 16 * sizeof(float); }

template <typename T>
__device__ __forceinline__ uint32_t ld_u32(const T* p) {  // two consecutive 16-bit elements
  return *reinterpret_cast<const uint32_t*>(p);
}

// NT: 8-column tiles of O each lane holds (dv <= 8 * NT; registers need a
// compile-time count).
template <typename T, int NT>
__global__ void __launch_bounds__(kThreads) nsa_decode_partial_tc_kernel(Params p, int slot0, int q_off,
                                                                         int tiles_off, int rows_off) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int DK = p.dk, DV = p.dv, ldq = DK + 8, ldv = DV + 8;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, gid = lane / 4, tig = lane % 4;
  T* Qs = reinterpret_cast<T*>(smem + q_off);
  // This warp's stages: K [16][DK+8] then V [16][DV+8] each.
  T* stages = reinterpret_cast<T*>(smem + tiles_off) + warp * kStages * kKeys * (ldq + ldv);
  float* Ox = reinterpret_cast<float*>(smem + tiles_off);  // [4][16][DV] after the key loop
  float* wm = reinterpret_cast<float*>(smem + rows_off);   // [4][16] row max per warp
  float* wl = wm + kWarps * 16;                            // [4][16] row sum per warp

  const int slot = slot0 + blockIdx.x;
  const int bg = blockIdx.y / p.n_head_chunks, h0 = (blockIdx.y % p.n_head_chunks) * p.head_chunk;
  const int b = bg / p.G, g = bg % p.G, nh = imin(p.head_chunk, p.h - h0);
  const T* q = static_cast<const T*>(p.q) + (int64_t(b) * p.H + g * p.h + h0) * DK;

  // Q rows of the chunk (rows past nh are zero-filled: their scores are masked),
  // copied before chain_start: q is the step's input, written before the
  // step's first launch started, while the lengths and the block choice come
  // from the launches before this one.
  const int kc = DK / 8, vc = DV / 8;  // 16-byte chunks per K / V row
  for (int i = tid; i < 16 * kc; i += kThreads) {
    const int r = i / kc, c = i % kc;
    tc::cp_async_16(Qs + r * ldq + c * 8, q + (r < nh ? r : 0) * DK + c * 8, r < nh);
  }
  tc::cp_async_commit();
  chain_start();
  const SlotKeys sk = slot_keys(p, b, g, step_t(p, b), slot);
  const int br = int(sk.br), NK = p.n_keys[br];
  const T* k = static_cast<const T*>(p.k[br]);
  const T* v = static_cast<const T*>(p.v[br]);
  // This warp's tiles are warp, warp + 4, ...; the copy of tile i into stage
  // i % 2 (its 16 keys of K and V; keys past the slot's end zero-filled, not read).
  const int n_tiles = ceil_div(sk.hi - sk.lo, kKeys);
  const auto issue_tile = [&](int tile, int stage) {
    T* Ks = stages + stage * kKeys * (ldq + ldv);
    T* Vs = Ks + kKeys * ldq;
    const int k0 = sk.lo + tile * kKeys;
    for (int i = lane; i < kKeys * kc; i += 32) {
      const int c = i / kc, key = k0 + c;
      const bool ok = key < sk.hi;
      tc::cp_async_16(Ks + c * ldq + (i % kc) * 8, k + row_offset(b, ok ? key : sk.lo, g, NK, p.G, DK) + (i % kc) * 8,
                      ok);
    }
    for (int i = lane; i < kKeys * vc; i += 32) {
      const int c = i / vc, key = k0 + c;
      const bool ok = key < sk.hi;
      tc::cp_async_16(Vs + c * ldv + (i % vc) * 8, v + row_offset(b, ok ? key : sk.lo, g, NK, p.G, DV) + (i % vc) * 8,
                      ok);
    }
    tc::cp_async_commit();
  };
  if (warp < n_tiles) {
    issue_tile(warp, 0);
    tc::cp_async_wait<1>();  // Q is here (this warp's first tile may still fly)
  } else {
    tc::cp_async_wait<0>();
  }
  __syncthreads();  // every warp's Q chunks are visible

  float o[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};  // rows gid, gid + 8 (l: this lane's columns)
  for (int tile = warp, it = 0; tile < n_tiles; tile += kWarps, ++it) {
    const int k0 = sk.lo + tile * kKeys;
    // 1. The next tile's copy goes out before this one is waited for.
    if (tile + kWarps < n_tiles) {
      issue_tile(tile + kWarps, (it + 1) % kStages);
      tc::cp_async_wait<1>();
    } else {
      tc::cp_async_wait<0>();
    }
    __syncwarp();  // the other lanes' copies are visible
    const T* Ks = stages + (it % kStages) * kKeys * (ldq + ldv);
    const T* Vs = Ks + kKeys * ldq;
    // 2. S = Q K^T. s[nt][e]: row gid + 8*(e/2), key nt*8 + 2*tig + e%2.
    float s[2][4] = {};
    for (int kk = 0; kk < DK; kk += 16) {
      uint32_t a[4];
      a[0] = ld_u32(Qs + gid * ldq + kk + 2 * tig);
      a[1] = ld_u32(Qs + (gid + 8) * ldq + kk + 2 * tig);
      a[2] = ld_u32(Qs + gid * ldq + kk + 8 + 2 * tig);
      a[3] = ld_u32(Qs + (gid + 8) * ldq + kk + 8 + 2 * tig);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const T* kr = Ks + (nt * 8 + gid) * ldq + kk + 2 * tig;
        tc::mma_16816<T>(s[nt], a, ld_u32(kr), ld_u32(kr + 8));
      }
    }
    // 3. Scale; -inf for padding heads and keys past the end; keep compressed scores.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = gid + (e / 2) * 8, key = k0 + nt * 8 + 2 * tig + e % 2;
        float x = s[nt][e] * p.scale;
        if (row >= nh || key >= sk.hi) x = -INFINITY;
        else if (sk.br == Branch::Compressed) p.scores[(int64_t(bg) * p.h + h0 + row) * p.cap_c + key] = x;
        s[nt][e] = x;
      }
    // 4. Online softmax; a row's 16 columns live in the 4 lanes of a quad.
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float mx = fmaxf(fmaxf(s[0][2 * hr], s[0][2 * hr + 1]), fmaxf(s[1][2 * hr], s[1][2 * hr + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_r[hr], mx);
      const float alpha = m_new == -INFINITY ? 1.f : expf(m_r[hr] - m_new);
      m_r[hr] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& x = s[nt][2 * hr + c];
          x = x == -INFINITY ? 0.f : expf(x - m_new);
          sum += x;
        }
      l_r[hr] = l_r[hr] * alpha + sum;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) o[nt][2 * hr] *= alpha, o[nt][2 * hr + 1] *= alpha;
    }
    // 5. O += P V.
    const uint32_t pa[4] = {tc::pack2<T>(s[0][0], s[0][1]), tc::pack2<T>(s[0][2], s[0][3]),
                            tc::pack2<T>(s[1][0], s[1][1]), tc::pack2<T>(s[1][2], s[1][3])};
    // ldmatrix.x4.trans row addresses: lanes 8i..8i+7 give the rows of 8x8 tile i =
    // (keys 0-7 | 8-15) x (columns nt*8 | nt*8+8); registers 0,1 = b0,b1 of n-tile
    // nt, registers 2,3 = b0,b1 of n-tile nt+1.
    const T* vrow = Vs + ((lane & 7) + ((lane >> 3) & 1) * 8) * ldv + (lane >> 4) * 8;
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      if (nt * 8 < DV) {  // DV % 16 == 0: n-tiles come in pairs
        uint32_t bv[4];
        tc::ldmatrix_x4_trans(bv, vrow + nt * 8);
        tc::mma_16816<T>(o[nt], pa, bv[0], bv[1]);
        tc::mma_16816<T>(o[nt + 1], pa, bv[2], bv[3]);
      }
    }
    __syncwarp();  // every lane is done with the stage before the copy after next lands in it
  }

  // 6. Merge the 4 warps: row sums over the quad, per-row CTA max, rescaled O
  //    parked in shared memory (over the tiles), summed in a fixed order.
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    l_r[hr] += __shfl_xor_sync(0xffffffffu, l_r[hr], 1);
    l_r[hr] += __shfl_xor_sync(0xffffffffu, l_r[hr], 2);
  }
  if (tig == 0) {
    wm[warp * 16 + gid] = m_r[0], wm[warp * 16 + gid + 8] = m_r[1];
    wl[warp * 16 + gid] = l_r[0], wl[warp * 16 + gid + 8] = l_r[1];
  }
  __syncthreads();  // row state visible, and every warp is past its tiles (Ox overwrites them)
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int row = gid + hr * 8;
    float M = -INFINITY;
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, wm[w * 16 + row]);
    const float f = m_r[hr] == -INFINITY ? 0.f : expf(m_r[hr] - M);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      if (nt * 8 < DV) {
        float* dst = Ox + (warp * 16 + row) * DV + nt * 8 + 2 * tig;
        dst[0] = o[nt][2 * hr] * f;
        dst[1] = o[nt][2 * hr + 1] * f;
      }
    }
  }
  __syncthreads();
  for (int i = tid; i < nh * DV; i += kThreads) {
    const int r = i / DV, e = i % DV;
    float acc = 0.f;
    for (int w = 0; w < kWarps; ++w) acc += Ox[(w * 16 + r) * DV + e];
    p.part_o[part_row(p, bg, slot, h0 + r) * DV + e] = acc;
  }
  for (int r = tid; r < nh; r += kThreads) {
    float M = -INFINITY, L = 0.f;
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, wm[w * 16 + r]);
    for (int w = 0; w < kWarps; ++w)
      if (wm[w * 16 + r] != -INFINITY) L += wl[w * 16 + r] * expf(wm[w * 16 + r] - M);
    float* ml = p.part_ml + part_row(p, bg, slot, h0 + r) * 2;
    ml[0] = M;  // empty slot: -inf, 0
    ml[1] = L;
  }
}

template <typename T, int NT>
void launch(const Params& p, int slot0, int n, bool chained) {
  const int q_off = 0, tiles_off = int(q_bytes(p.dk)), rows_off = int(q_bytes(p.dk) + tiles_bytes(p.dk, p.dv));
  const size_t smem = smem_bytes(p.dk, p.dv);
  auto kernel = nsa_decode_partial_tc_kernel<T, NT>;
  NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const dim3 grid(n, p.B * p.G * p.n_head_chunks);
  launch_chained(kernel, grid, dim3(kThreads), smem, at::cuda::getCurrentCUDAStream(), chained, p, slot0, q_off,
                 tiles_off, rows_off);
}

template <typename T>
void launch_for_dv(const Params& p, int slot0, int n, bool chained) {
  if (p.dv <= 64) launch<T, 8>(p, slot0, n, chained);
  else if (p.dv <= 128) launch<T, 16>(p, slot0, n, chained);
  else launch<T, 32>(p, slot0, n, chained);
}

}  // namespace
}  // namespace decode

size_t decode_v2_smem_bytes(int dk, int dv) { return decode::smem_bytes(dk, dv); }

void launch_decode_partial_v2(at::ScalarType dtype, const decode::Params& p, int slot0, int n, bool chained) {
  if (n == 0) return;
  TORCH_CHECK(p.head_chunk <= 16 && p.dk % 16 == 0 && p.dv % 16 == 0 && p.dv <= 256,
              "decode_attention v2: unsupported tiling");
  if (dtype == at::kBFloat16) decode::launch_for_dv<c10::BFloat16>(p, slot0, n, chained);
  else if (dtype == at::kHalf) decode::launch_for_dv<c10::Half>(p, slot0, n, chained);
  else TORCH_CHECK(false, "decode_attention v2: float16 / bfloat16 only, got ", dtype);
}

}  // namespace nsa::cuda
