// Warp-level tensor-core building blocks of the v2 attention kernels
// (attention_fwd_tc.cu, attention_bwd_tc.cu): 16-byte async copies into shared
// memory, ldmatrix, mma.sync m16n8k16 with fp32 accumulators for fp16 / bf16
// operands, and the two warp tiles built from them (16 rows x a shared tile:
// A B^T and C B).
//
// Why inline PTX mma.sync rather than nvcuda::wmma: flash attention needs to
// know which accumulator element a lane holds (to mask per (query, key), to
// reduce row maxima over the 4 lanes of a row, and to reuse the S accumulators
// as the A operand of P·V without a trip through shared memory). wmma leaves
// that mapping unspecified; mma.sync documents it (PTX ISA, "Matrix Fragments
// for mma.m16n8k16 with floating point type"). With lane = 4*gid + tig
// (gid = lane / 4, tig = lane % 4), each 32-bit register holds 2 consecutive
// 16-bit elements, lower column in the low half:
//
//   A 16x16 (row-major), 4 regs:  a[0] = A[gid  ][2tig..+1]   a[1] = A[gid+8][2tig..+1]
//                                 a[2] = A[gid  ][2tig+8..+9] a[3] = A[gid+8][2tig+8..+9]
//   B 16x8  (k x n, "col"), 2 regs: b[0] = B[2tig..+1][gid]   b[1] = B[2tig+8..+9][gid]
//   C/D 16x8 fp32, 4 floats:      c[0..1] = C[gid][2tig..+1]  c[2..3] = C[gid+8][2tig..+1]
//
// ldmatrix .x4 loads four 8x8 tiles of 16-bit elements; lanes 8i..8i+7 give the
// row addresses of tile i, and register i of every lane receives tile i in the
// A/C layout above (row gid, columns 2tig..+1); with .trans it receives the
// transposed tile (stored rows 2tig..+1 of stored column gid), which is the B
// layout when the tile is stored k-major (V stored [key][dim]).
#pragma once

#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "nsa/cuda/attention_common.cuh"

namespace nsa::cuda::tc {

// ---- the v2 tiling (forward and dq share it) -------------------------------------
constexpr int kTcThreads = 128;            // 4 warps per CTA
constexpr int kTcWarps = kTcThreads / 32;
constexpr int kTcKeys = 64;                // keys per shared-memory stage
constexpr int kTcRowsWin = kTcWarps * 16;  // Window / Compressed rows per CTA (16 per warp)
constexpr int kSmemPad = 8;                // 16-bit elements of padding per shared row
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
static_assert(kTcThreads == 2 * kTcKeys, "the loaders give each key row of a tile two threads");
static_assert(kTcRowsWin <= 64, "Selected marks a CTA's queries in one 64-bit mask");

// Two K/V stages of kTcKeys rows, 16-bit elements, rows padded by 16 bytes so
// the 8 rows an ldmatrix reads fall in 8 different bank groups.
template <int DK, int DV>
struct KvStages {
  static constexpr int kLdK = DK + kSmemPad, kLdV = DV + kSmemPad;  // elements per shared row
  static constexpr size_t kBytes = 2 * size_t(kTcKeys) * (kLdK + kLdV) * 2;
  static_assert(kBytes <= kSmemBudget, "K/V stages exceed the shared-memory budget");
};

// 2^x on the MUFU unit with denormal results flushed to zero. exp2f without
// -ftz wraps the same instruction in a range test and two multiplies (ncu: one
// FSETP per MUFU.EX2 in the selected forward); a probability below 2^-126 is
// zero in a 16-bit P either way and nothing beside the fp32 row sums. -inf -> 0.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared without staging in registers (sm_80+). When
// `valid` is false nothing is read and the 16 bytes are zero-filled (src-size
// 0), so padding rows of a tile are zeros, never stale shared memory.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
// 4 bytes (a per-row scalar: logsumexp, delta), through L1 (.ca: .cg takes 16 only); zeros when !valid.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem_row))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem_row))
               : "memory");
}

// d += A(16x16) * B(16x8), fp32 accumulators; T selects the operand type.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<c10::BFloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<c10::Half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                     uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 8 x 8 matrix of 16-bit elements the warp holds one register per lane
// (row gid, columns 2tig..+1) transposed: afterwards the lane holds row gid,
// columns 2tig..+1 of the transpose (sm_75+). Turns a C fragment whose rows
// are the reduction dimension (keys of S^T) into the B fragment of the next
// product (P^T as B of O^T = V^T P^T), without shared memory.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// Two floats -> one register of two 16-bit values (lo in the low half), round to nearest.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<c10::BFloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}
template <>
__device__ __forceinline__ uint32_t pack2<c10::Half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

// Two consecutive 16-bit elements from global memory (4-byte aligned) as one register.
template <typename T>
__device__ __forceinline__ uint32_t ldg_pair(const T* p) {
  return __ldg(reinterpret_cast<const unsigned int*>(p));
}

// ---- warp tiles: one warp, 16 rows, operands B in shared memory ---------------

// A fragments of 16 rows x D (row-major in global memory, 4-byte aligned rows
// row0 = rows gid, row1 = rows gid + 8); zeros for an invalid row.
template <typename T, int D>
__device__ __forceinline__ void load_a_frags(uint32_t (&a)[D / 16][4], const T* row0, bool valid0, const T* row1,
                                             bool valid1, int tig) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = kk * 16 + 2 * tig;
    a[kk][0] = valid0 ? ldg_pair(row0 + c) : 0u;
    a[kk][1] = valid1 ? ldg_pair(row1 + c) : 0u;
    a[kk][2] = valid0 ? ldg_pair(row0 + c + 8) : 0u;
    a[kk][3] = valid1 ? ldg_pair(row1 + c + 8) : 0u;
  }
}

// A fragments of the 16 shared rows r0 .. r0 + 15 (D elements each, row
// stride LD) by ldmatrix x4, in the layout warp_a_bt takes: lanes 0-7 rows
// +0..7 cols +0..7 (a[0]), 8-15 rows +8..15 cols +0..7 (a[1]), 16-23 rows
// +0..7 cols +8..15 (a[2]), 24-31 rows +8..15 cols +8..15 (a[3]).
template <typename T, int D, int LD>
__device__ __forceinline__ void ldmatrix_a_frags(uint32_t (&a)[D / 16][4], const T* smem, int r0, int lane) {
  const T* base = smem + (r0 + lane % 8 + ((lane / 8) % 2) * 8) * LD + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(a[kk], base + kk * 16);
}

// acc[16 x NK] = A[16 x KD] * B^T, B = the NK shared rows kr0 .. kr0 + NK of
// KD elements each (row stride LD): S = Q K^T, dP = dO V^T.
// ldmatrix x4 tiles: lanes 0-7 rows +0..7 cols +0..7, 8-15 rows +0..7 cols
// +8..15, 16-23 rows +8..15 cols +0..7, 24-31 rows +8..15 cols +8..15 -> b[0..1]
// is the B fragment of rows (n) +0..7, b[2..3] of rows +8..15.
template <typename T, int KD, int NK, int LD>
__device__ __forceinline__ void warp_a_bt(float (&acc)[NK / 8][4], const uint32_t (&a)[KD / 16][4], const T* smem,
                                          int kr0, int lane) {
#pragma unroll
  for (int n = 0; n < NK / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  const T* base = smem + (kr0 + (lane / 16) * 8 + lane % 8) * LD + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk) {
#pragma unroll
    for (int np = 0; np < NK / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, base + np * 16 * LD + kk * 16);
      mma_16816<T>(acc[2 * np], a[kk], b[0], b[1]);
      mma_16816<T>(acc[2 * np + 1], a[kk], b[2], b[3]);
    }
  }
}

// warp_a_bt with A read from shared memory too, a k-step at a time (no A
// fragments held across the product): A = the 16 shared rows ar0.. (KD
// elements, stride LDA), B = the NK shared rows br0.. (stride LDB). The dk/dv
// kernels' S^T = K Q^T and dP^T = V dO^T, KeyOuter dq's S = Q K^T and dP =
// dO V^T. A's tiles as in ldmatrix_a_frags, B's as in warp_a_bt.
template <typename T, int KD, int NK, int LDA, int LDB>
__device__ __forceinline__ void warp_smem_a_bt(float (&acc)[NK / 8][4], const T* As, int ar0, const T* Bs, int br0,
                                               int lane) {
#pragma unroll
  for (int n = 0; n < NK / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  const T* abase = As + (ar0 + lane % 8 + ((lane / 8) % 2) * 8) * LDA + (lane / 16) * 8;
  const T* bbase = Bs + (br0 + (lane / 16) * 8 + lane % 8) * LDB + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, abase + kk * 16);
#pragma unroll
    for (int np = 0; np < NK / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, bbase + np * 16 * LDB + kk * 16);
      mma_16816<T>(acc[2 * np], a, b[0], b[1]);
      mma_16816<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// acc[16 x ND] += C[16 x NK] * B, C = fp32 accumulators of an earlier warp_a_bt
// rounded to T (the C layout of n-tiles 2kk, 2kk + 1 is the A layout of k-step
// kk), B = the NK shared rows kr0 .. kr0 + NK of ND elements (row stride LD):
// O += P V, dQ += dS K.
// ldmatrix x4.trans tiles: lanes 0-7 rows +0..7 cols +0..7, 8-15 rows +8..15
// cols +0..7, 16-23 rows +0..7 cols +8..15, 24-31 rows +8..15 cols +8..15 ->
// b[0..1] is the B fragment of cols (n) +0..7, b[2..3] of cols +8..15.
template <typename T, int ND, int NK, int LD>
__device__ __forceinline__ void warp_c_b(float (&acc)[ND / 8][4], const float (&c)[NK / 8][4], const T* smem,
                                         int kr0, int lane) {
  const T* base = smem + (kr0 + ((lane / 8) % 2) * 8 + lane % 8) * LD + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < NK / 16; ++kk) {
    const uint32_t a[4] = {pack2<T>(c[2 * kk][0], c[2 * kk][1]), pack2<T>(c[2 * kk][2], c[2 * kk][3]),
                           pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]),
                           pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3])};
#pragma unroll
    for (int np = 0; np < ND / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, base + kk * 16 * LD + np * 16);
      mma_16816<T>(acc[2 * np], a, b[0], b[1]);
      mma_16816<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// The A fragment of one 16 x 16 k-step (rows r0 .. r0 + 15, k = k0 .. k0 + 15)
// of a matrix stored transposed in shared memory, [k][row] with row stride LD:
// dS from the stored dS^T. ldmatrix x4.trans tiles: lanes 0-7 k +0..7 rows +0,
// 8-15 k +0..7 rows +8, 16-23 k +8..15 rows +0, 24-31 k +8..15 rows +8; each
// lane then holds k 2tig..+1 of row gid of its tile, the A layout above.
template <typename T, int LD>
__device__ __forceinline__ void ldmatrix_a_frag_trans(uint32_t (&a)[4], const T* smem, int k0, int r0, int lane) {
  ldmatrix_x4_trans(a, smem + (k0 + lane % 8 + (lane / 16) * 8) * LD + r0 + ((lane / 8) % 2) * 8);
}

// acc[16 x ND] += A[16 x 16] * B, A one k-step's fragment, B = the 16 shared
// rows k0 .. k0 + 15 of ND elements from column c0 (row stride LD): dQ += dS K
// one k-step at a time (the B side of warp_c_b).
template <typename T, int ND, int LD>
__device__ __forceinline__ void warp_a_b_step(float (&acc)[ND / 8][4], const uint32_t (&a)[4], const T* smem, int k0,
                                              int c0, int lane) {
  const T* base = smem + (k0 + ((lane / 8) % 2) * 8 + lane % 8) * LD + c0 + (lane / 16) * 8;
#pragma unroll
  for (int np = 0; np < ND / 16; ++np) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, base + np * 16);
    mma_16816<T>(acc[2 * np], a, b[0], b[1]);
    mma_16816<T>(acc[2 * np + 1], a, b[2], b[3]);
  }
}

// Online softmax over one tile of raw scores s (q.k, -inf where masked),
// scaled into the log2 domain by scale_log2 = scale log2 e as they are used:
// s becomes P = 2^(s scale_log2 - m_new), one FFMA and one MUFU.EX2 per score;
// O and l are rescaled by alpha = 2^(m_old - m_new). m is kept scaled. The row
// max is taken over raw scores, which a positive scale leaves in order; a
// scale <= 0 (allowed, never used by the model) scales first.
template <int NK, int DV>
__device__ __forceinline__ void softmax_update(float (&s)[NK / 8][4], float scale_log2, float (&m)[2], float (&l)[2],
                                               float (&o)[DV / 8][4]) {
  float f = scale_log2;
  if (!(f > 0.f)) {
#pragma unroll
    for (int n = 0; n < NK / 8; ++n) {
#pragma unroll
      for (int j = 0; j < 4; ++j) s[n][j] = s[n][j] == -INFINITY ? -INFINITY : s[n][j] * f;
    }
    f = 1.f;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < NK / 8; ++n) {
    mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
  }
  float base[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    // The 4 lanes of a row (same gid) hold its 8-column slices: reduce over them.
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
    const float m_new = fmaxf(m[i], mx[i] * f);     // -inf * f = -inf
    base[i] = m_new == -INFINITY ? 0.f : m_new;     // nothing seen yet: exponents against 0, no NaN
    alpha[i] = tc::exp2_ftz(m[i] - base[i]);       // m = -inf -> 0 (O and l are 0 anyway)
    m[i] = m_new;
  }
#pragma unroll
  for (int n = 0; n < NK / 8; ++n) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s[n][j] = tc::exp2_ftz(fmaf(s[n][j], f, -base[j / 2]));  // -inf -> 0
      sum[j / 2] += s[n][j];
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) l[i] = l[i] * alpha[i] + sum[i];
#pragma unroll
  for (int n = 0; n < DV / 8; ++n) {
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }
}

// One row of D 16-bit elements global -> shared in 16-byte pieces, piece c
// landing STEP elements after piece c - 1 from `dst` (8: a plain row; 64: a row
// of wgmma's core matrices, wgmma.cuh); the PARTS threads of a row take every
// PARTS-th piece from their `part` (0 .. PARTS - 1).
// The loop runs from the part's own first piece, so its trip count and every
// offset are constants: one address per thread and row, each copy an
// immediate offset from it. (Counted from `part`, the trip count was a
// run-time value and each piece got its own 64-bit address. Measured, H200,
// docs/performance.md: the selected backward 1.3-2.2 % faster, select_blocks
// 1.2 % slower at paper_kernel 64k, the layer within noise.)
template <int D, int PARTS, int STEP, typename T>
__device__ __forceinline__ void copy_pieces_async(T* dst, const T* src, bool valid, int part) {
  constexpr int kPieces = D / 8, kEvery = kPieces / PARTS, kLeft = kPieces % PARTS;
  dst += part * STEP, src += part * 8;
#pragma unroll
  for (int k = 0; k < kEvery; ++k) cp_async_16(dst + k * PARTS * STEP, src + k * PARTS * 8, valid);
  if constexpr (kLeft != 0)
    if (part < kLeft) cp_async_16(dst + kEvery * PARTS * STEP, src + kEvery * PARTS * 8, valid);
}

// One row of D 16-bit elements global -> shared (copy_pieces_async into a plain row).
template <int D, int PARTS = 2, typename T>
__device__ __forceinline__ void copy_row_async(T* dst, const T* src, bool valid, int part) {
  copy_pieces_async<D, PARTS, 8>(dst, src, valid, part);
}

}  // namespace nsa::cuda::tc
