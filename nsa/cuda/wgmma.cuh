// Hopper warpgroup tensor-core MMA (wgmma.mma_async, sm_90a) for the v3
// attention forward (attention_fwd_tc.cu) and the selected KeyOuter forward
// (selected_key_outer.cu): the building blocks and the two warpgroup tiles,
// beside mma_tile.cuh's warp tiles they replace there.
//
// Why: the v2 kernels issue mma.sync m16n8k16 per warp, each B fragment loaded
// from shared memory by ldmatrix into registers first; at 4 warps x 16 rows
// they were latency-bound (25 % occupancy, 34-47 % of issue slots busy, ncu).
// One wgmma m64n64k16 does the work of 32 mma.sync for the 4 warps of a
// warpgroup (128 threads = the v2 CTA), reads B straight from shared memory
// through a descriptor and runs asynchronously (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions").
// Measured (H200, docs/performance.md): used synchronously (issue, wait) it
// did not beat v2 once v2 copied whole rows per instruction (the kernels are
// latency-bound, not MMA-bound), so the layer keeps it off (NSA_CUDA_WGMMA);
// it is the base for an overlapped form (next tile's Q K^T in flight during
// this tile's softmax). The selected KeyOuter forward, whose warps each read
// the block's 40 KB of K and V for 16 rows, takes it by default (2 % faster at
// paper_kernel 64k, H200).
//
// Layouts, with lane = 4 gid + tig inside each warp w of the warpgroup:
//   A 64 x 16 in registers: warp w holds rows 16 w .. 16 w + 15 exactly as
//     mma.sync's A fragment (mma_tile.cuh): so Q loaded by load_a_frags, and P
//     rounded from the S accumulators, are wgmma A operands unchanged.
//   D 64 x N fp32: d[n][0..1] = D[16 w + gid][8 n + 2 tig ..], d[n][2..3] = row
//     + 8: again mma.sync's C layout per warp, so the softmax code of v2 runs on
//     it as it is.
//   B in shared memory, "core matrices" without swizzle: a tile of R rows x C
//     16-bit columns is stored as 8 x 8 blocks of 128 contiguous bytes (8 rows
//     of 16 bytes), [R / 8][C / 8][8][8]; a 16-byte piece (row r, chunk c of 8
//     columns) sits at element ((r / 8)(C / 8) + c) 64 + (r % 8) 8, so a
//     cp.async of 16 bytes fills one row of one core matrix. The descriptor
//     gives the distances between core matrices: LBO along the reduction (K)
//     dimension, SBO along N. Read as K-major (K rows x D columns for S = Q K^T:
//     N = keys = rows, K = head dims = columns): LBO = 128 B, SBO = (C / 8) 128 B.
//     Read as MN-major (V rows x D columns for O = P V: K = keys = rows, N =
//     head dims = columns; imm-trans-b = 1): LBO = (C / 8) 128 B, SBO = 128 B.
//   The same stored tile thus serves both products; no ldmatrix, no padding
//   (each core matrix covers all 32 banks once).
// Shared memory written by cp.async (the generic proxy) must be fenced for the
// async proxy wgmma reads through (fence_proxy_async, before the barrier).
#pragma once

#include <cstdint>

#include "nsa/cuda/mma_tile.cuh"

namespace nsa::cuda::wg {

// wgmma exists only in code compiled for sm_90a; elsewhere the v3 kernels are
// empty and never launched (launch_attention_fwd_tc checks the device and the
// build, NSA_CUDA_SM90A).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NSA_WGMMA_DEVICE 1
#else
#define NSA_WGMMA_DEVICE 0
#endif

// Element offset of the 16-byte piece (row r, chunk c) of a [R][C] core-matrix tile.
template <int C>
__device__ __forceinline__ int core_offset(int r, int c) {
  return ((r / 8) * (C / 8) + c) * 64 + (r % 8) * 8;
}

// Shared-memory matrix descriptor, no swizzle: start address, LBO and SBO in
// 16-byte units (bits 0-13, 16-29, 32-45), base offset 0, layout type 0.
__device__ __forceinline__ uint64_t smem_desc(const void* p, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint32_t a = tc::smem_u32(p);
  return uint64_t((a & 0x3FFFFu) >> 4) | (uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32);
}

__device__ __forceinline__ void fence() {
#if NSA_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#if NSA_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wait() {
#if NSA_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Makes this thread's completed generic-proxy writes to shared memory (cp.async
// included) visible to the async proxy; a barrier after it publishes them to
// the warpgroup.
__device__ __forceinline__ void fence_proxy_async() {
#if NSA_WGMMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Pins an accumulator register across the asynchronous MMA: the compiler may
// neither read nor move it between the issue and the wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n) {
#pragma unroll
    for (int j = 0; j < 4; ++j) fence_operand(d[n][j]);
  }
}

// d (64 x 64, fp32) = A (64 x 16, registers) * B (16 x 64, descriptor) + (accumulate ? d : 0).
// TRANS_B = 0: B stored K-major; 1: MN-major (mma's imm-trans-b).
template <typename T, int TRANS_B>
__device__ __forceinline__ void mma_m64n64k16(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc,
                                              bool accumulate);

#define NSA_WG_D8(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define NSA_WG_MMA(TYPE, PTXTYPE)                                                                                 \
  template <>                                                                                                     \
  __device__ __forceinline__ void mma_m64n64k16<TYPE, 0>(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc, \
                                                         bool accumulate) {                                       \
    NSA_WG_ASM(PTXTYPE, "0")                                                                                      \
  }                                                                                                               \
  template <>                                                                                                     \
  __device__ __forceinline__ void mma_m64n64k16<TYPE, 1>(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc, \
                                                         bool accumulate) {                                       \
    NSA_WG_ASM(PTXTYPE, "1")                                                                                      \
  }
#if NSA_WGMMA_DEVICE
#define NSA_WG_ASM(PTXTYPE, TRANS)                                                                          \
  asm volatile(                                                                                             \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %36, 0;\n"                                                          \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTXTYPE "." PTXTYPE                                     \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "   \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %37, p, 1, 1, " TRANS \
      ";\n}\n"                                                                                              \
      : NSA_WG_D8(0), NSA_WG_D8(1), NSA_WG_D8(2), NSA_WG_D8(3), NSA_WG_D8(4), NSA_WG_D8(5), NSA_WG_D8(6),   \
        NSA_WG_D8(7)                                                                                        \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(int(accumulate)), "l"(desc));
#else
#define NSA_WG_ASM(PTXTYPE, TRANS) \
  (void)d, (void)a, (void)desc, (void)accumulate;
#endif
NSA_WG_MMA(c10::BFloat16, "bf16")
NSA_WG_MMA(c10::Half, "f16")
#undef NSA_WG_MMA
#undef NSA_WG_ASM

// d (64 x N, fp32) = A (64 x 16) * B (16 x N) + (accumulate ? d : 0), both
// operands in shared memory through descriptors, both K-major (N = 16, 32 or
// 64): the selected dk/dv kernel's S^T = K Q^T and dP^T = V dO^T, whose A (the
// CTA's 64 keys) is too wide to hold in registers at the paper's heads.
template <typename T, int N>
__device__ __forceinline__ void mma_m64k16_ss(float (&d)[N / 8][4], uint64_t adesc, uint64_t bdesc,
                                              bool accumulate);
#define NSA_WG_R8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define NSA_WG_R16 NSA_WG_R8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define NSA_WG_R32 NSA_WG_R16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define NSA_WG_OUT16 NSA_WG_D8(0), NSA_WG_D8(1)
#define NSA_WG_OUT32 NSA_WG_OUT16, NSA_WG_D8(2), NSA_WG_D8(3)
#define NSA_WG_OUT64 NSA_WG_OUT32, NSA_WG_D8(4), NSA_WG_D8(5), NSA_WG_D8(6), NSA_WG_D8(7)
#if NSA_WGMMA_DEVICE
// REGS: the accumulators' operand list; A, B, P: the operand numbers after them;
// the variadic tail: the accumulators' constraints.
#define NSA_WG_SS_ASM(PTXTYPE, N, REGS, A, B, P, ...)                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" P ", 0;\n"                                              \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTXTYPE "." PTXTYPE " {" REGS "}, %" A     \
               ", %" B ", p, 1, 1, 0, 0;\n}\n"                                                               \
               : __VA_ARGS__                                                                                \
               : "l"(adesc), "l"(bdesc), "r"(int(accumulate)));
#else
#define NSA_WG_SS_ASM(PTXTYPE, N, REGS, A, B, P, ...) (void)d, (void)adesc, (void)bdesc, (void)accumulate;
#endif
#define NSA_WG_SS(TYPE, PTXTYPE, N, REGS, A, B, P, ...)                                                       \
  template <>                                                                                                 \
  __device__ __forceinline__ void mma_m64k16_ss<TYPE, N>(float (&d)[N / 8][4], uint64_t adesc, uint64_t bdesc, \
                                                         bool accumulate) {                                   \
    NSA_WG_SS_ASM(PTXTYPE, N, REGS, A, B, P, __VA_ARGS__)                                                     \
  }
#define NSA_WG_SS_ALL(TYPE, PTXTYPE)                                       \
  NSA_WG_SS(TYPE, PTXTYPE, 16, NSA_WG_R8, "8", "9", "10", NSA_WG_OUT16)    \
  NSA_WG_SS(TYPE, PTXTYPE, 32, NSA_WG_R16, "16", "17", "18", NSA_WG_OUT32) \
  NSA_WG_SS(TYPE, PTXTYPE, 64, NSA_WG_R32, "32", "33", "34", NSA_WG_OUT64)
NSA_WG_SS_ALL(c10::BFloat16, "bf16")
NSA_WG_SS_ALL(c10::Half, "f16")
#undef NSA_WG_SS_ALL
#undef NSA_WG_SS
#undef NSA_WG_SS_ASM
#undef NSA_WG_OUT64
#undef NSA_WG_OUT32
#undef NSA_WG_OUT16
#undef NSA_WG_R32
#undef NSA_WG_R16
#undef NSA_WG_R8
#undef NSA_WG_D8

// ---- warpgroup tiles: the 4 warps of a CTA, 64 rows, B in shared memory ----------

// acc[64 x 64] = A[64 x KD] B^T, A = this warp's 16 rows as A fragments (Q),
// B = 64 rows x KD columns of a core-matrix tile (K): S = Q K^T.
template <typename T, int KD>
__device__ __forceinline__ void warpgroup_a_bt(float (&acc)[8][4], const uint32_t (&a)[KD / 16][4], const T* tile) {
  fence();
  fence_operands(acc);
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk)  // columns 16 kk .. : chunks 2 kk, 2 kk + 1
    mma_m64n64k16<T, 0>(acc, a[kk], smem_desc(tile + kk * 2 * 64, 128, (KD / 8) * 128), kk > 0);
  commit();
  wait<0>();
  fence_operands(acc);
}

// acc[64 x N] = A[64 x KD] B^T, both from core-matrix tiles in shared memory:
// A = 64 rows x KD columns (`a_tile`), B = N rows x KD columns starting at
// `b_rows` (a row of a [R][KD] tile that is a multiple of 8). Issued only: the
// caller fences before, commits, waits and fences the accumulators after, so
// that several products share one wait (the dk/dv kernel's S^T and dP^T).
template <typename T, int KD, int N>
__device__ __forceinline__ void warpgroup_ss_bt_issue(float (&acc)[N / 8][4], const T* a_tile, const T* b_rows) {
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk)  // columns 16 kk .. : chunks 2 kk, 2 kk + 1
    mma_m64k16_ss<T, N>(acc, smem_desc(a_tile + kk * 2 * 64, 128, (KD / 8) * 128),
                        smem_desc(b_rows + kk * 2 * 64, 128, (KD / 8) * 128), kk > 0);
}

// acc[64 x C] += A[64 x NK] B as warpgroup_c_b_issue below, with A's
// fragments given (warp w's rows 16 w .., one [4] a k-step of 16, mma.sync's
// A layout): the dk/dv kernel's dQ += dS K, dS read by ldmatrix.trans.
template <typename T, int NK, int C = 64>
__device__ __forceinline__ void warpgroup_a_b_issue(float (&acc)[C / 8][4], const uint32_t (&a)[NK / 16][4],
                                                    const T* rows) {
  static_assert(C % 64 == 0, "the tile's columns go 64 an MMA");
#pragma unroll
  for (int kk = 0; kk < NK / 16; ++kk) {  // rows (keys) 16 kk .. : row groups 2 kk, 2 kk + 1
#pragma unroll
    for (int h = 0; h < C / 64; ++h)  // columns 64 h .. : chunks 8 h .. 8 h + 7
      mma_m64n64k16<T, 1>(*reinterpret_cast<float(*)[8][4]>(acc[8 * h]), a[kk],
                          smem_desc(rows + (kk * 2 * (C / 8) + 8 * h) * 64, (C / 8) * 128, 128), true);
  }
}

// acc[64 x C] += P[64 x NK] B, P = fp32 accumulators of an earlier product
// rounded to T (C layout of n-tiles 2 kk, 2 kk + 1 = A layout of k-step kk),
// B = NK rows x C columns of a core-matrix tile from `rows` (a multiple of 8),
// C a multiple of 64 taken 64 columns an MMA (acc[8 h ..] holds columns 64 h
// ..): O += P V; the dk/dv kernel's dV += P^T dO and dK += dS^T Q. Issued only
// (as warpgroup_ss_bt_issue). The MMAs read the rounded P from registers until
// the caller's wait; PTX forbids writing them before it, and ptxas, which
// allocates the registers, keeps them (the tests would see a clobbered P).
template <typename T, int NK, int C = 64>
__device__ __forceinline__ void warpgroup_c_b_issue(float (&acc)[C / 8][4], const float (&c)[NK / 8][4],
                                                    const T* rows) {
  uint32_t a[NK / 16][4];
#pragma unroll
  for (int kk = 0; kk < NK / 16; ++kk) {
    a[kk][0] = tc::pack2<T>(c[2 * kk][0], c[2 * kk][1]);
    a[kk][1] = tc::pack2<T>(c[2 * kk][2], c[2 * kk][3]);
    a[kk][2] = tc::pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
    a[kk][3] = tc::pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
  }
  warpgroup_a_b_issue<T, NK, C>(acc, a, rows);
}

// warpgroup_c_b_issue, waited for: O += P V in the KeyOuter and v3 forwards.
template <typename T, int NK, int C = 64>
__device__ __forceinline__ void warpgroup_c_b(float (&acc)[C / 8][4], const float (&c)[NK / 8][4], const T* tile) {
  fence();
  fence_operands(acc);
  warpgroup_c_b_issue<T, NK, C>(acc, c, tile);
  commit();
  wait<0>();
  fence_operands(acc);
}

// Row r of a [R][D] core-matrix tile from global memory, D 16-bit elements in
// 16-byte pieces; the PARTS threads of a row take every PARTS-th piece from
// their `part` (tc::copy_pieces_async: piece c lies a core matrix, 64
// elements, after piece c - 1).
template <int D, int PARTS, typename T>
__device__ __forceinline__ void copy_row_core_async(T* tile, int r, const T* src, bool valid, int part) {
  tc::copy_pieces_async<D, PARTS, 64>(tile + core_offset<D>(r, 0), src, valid, part);
}

// acc[16 x ND] += A[16 x 16] B, tc::warp_a_b_step with B read from a
// core-matrix tile of D columns (rows k0 .. k0 + 15, columns c0 ..): the dk/dv
// kernel's dQ += dS K where its K tile is stored for the warpgroup MMAs. Each
// ldmatrix 8-lane group reads one core matrix: 128 contiguous bytes.
template <typename T, int ND, int D>
__device__ __forceinline__ void warp_a_b_step_core(float (&acc)[ND / 8][4], const uint32_t (&a)[4], const T* tile,
                                                   int k0, int c0, int lane) {
  const int r = k0 + ((lane / 8) % 2) * 8 + lane % 8, chunk = c0 / 8 + lane / 16;
#pragma unroll
  for (int np = 0; np < ND / 16; ++np) {
    uint32_t b[4];
    tc::ldmatrix_x4_trans(b, tile + core_offset<D>(r, chunk + 2 * np));
    tc::mma_16816<T>(acc[2 * np], a, b[0], b[1]);
    tc::mma_16816<T>(acc[2 * np + 1], a, b[2], b[3]);
  }
}

}  // namespace nsa::cuda::wg
