// NSA decode attention (DESIGN.md §2 for the single query t = len - 1 of each
// batch row), four launches, no host round trip, length read on the device:
//
//   1. partial   split-K attention partials (m, l, unnormalised o) of the
//                compressed keys and the window, n_cmp_split + n_win_split CTAs
//                per (b, g, head chunk); the compressed CTAs also keep their raw
//                scores s = scale q.kc for the selection.
//   2. select    per CTA 64 selection blocks: col[i] = sum over the group's
//                heads of p_cmp[i] (p from the global max / denominator of the
//                partials) for the compressed keys they overlap, one key per
//                thread, then each block's score (col summed over its
//                overlapping compressed blocks, ascending); the last CTA of each
//                (b, g) forces blocks 0, t/l', t/l'-1, takes the top n (ties ->
//                lower index) and writes them sorted, -1 padding (as select_blocks).
//   3. partial   split-K partials of the selected branch, one CTA per chosen block.
//   4. combine   per (b, head, branch): o = sum_s e^(m_s - m) o_s / sum_s e^(m_s - m) l_s,
//                and, when asked, the branch's logsumexp m + log(sum_s e^(m_s - m) l_s).
// On sm_90 and later, launches 2-4 are programmatic dependent launches of the
// one before (chain_start, decode_kernels.cuh): at batch 1 the step is four
// short dependent grids, and their start-up gaps were ~2 us of it.
//
// Why split-K (flash-decoding): one query has only B*G*ceil(h/16) independent
// (b, g, head chunk) rows; at 64k keys that is 4 CTAs for the paper's shape, a
// few % of an H100. Splitting the 4095 compressed keys over up to 32 CTAs per
// (b, g, head chunk) (one per lane of the warps that merge them in launches 2
// and 4) keeps the SMs streaming. The split count is fixed by the capacity
// (the grid of a captured graph cannot change) and each CTA's share follows the
// current length, read on the device.
//
// Versions of the partial kernel (both fp32 softmax and accumulators):
//   v1  SIMT, this file: any dtype; tiles of 32 keys in fp32 shared memory, one
//       (head, key) dot product per thread. Simple and obviously right; the
//       fp32 path and the oracle for v2.
//   v2  tensor cores (mma.sync m16n8k16), decode_attention_tc.cu: fp16/bf16; the
//       16 heads of a chunk are the M=16 rows, 4 warps each own tiles of 16 keys.
// Select and combine are shared. Timings: README "Decode".
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <utility>

#include "nsa/cuda/cuda_check.h"
#include "nsa/cuda/decode_attention.h"
#include "nsa/cuda/decode_kernels.cuh"
#include "nsa/cuda/nsa_cuda.h"
#include "nsa/cuda/simt_tiles.cuh"
#include "nsa/cuda/top_n.cuh"

namespace nsa::cuda {
namespace decode {
namespace {

constexpr int kV1Threads = 256;
constexpr int kV1Tile = 32;  // keys per tile: one per lane in the softmax step
constexpr int kCombineThreads = 256;  // 8 warps share the slots of one (head, branch)

// v1 shared memory (floats): Q [hc][dk], K [32][dk+1], V [32][dv], S [hc][33],
// O [hc][dv], row max / sum / rescale [hc] x 3. The +1 pads keep a warp's
// column walks on distinct banks.
size_t v1_smem_floats(int hc, int dk, int dv) {
  return size_t(hc) * dk + size_t(kV1Tile) * (dk + 1) + size_t(kV1Tile) * dv + size_t(hc) * (kV1Tile + 1) +
         size_t(hc) * dv + 3 * size_t(hc);
}

template <typename T>
__global__ void __launch_bounds__(kV1Threads) nsa_decode_partial_kernel(Params p, int slot0) {
  extern __shared__ float smem[];
  const int HC = p.head_chunk, DK = p.dk, DV = p.dv, BC = kV1Tile;
  float* Qs = smem;                // [HC][DK]
  float* Ks = Qs + HC * DK;        // [BC][DK+1]
  float* Vs = Ks + BC * (DK + 1);  // [BC][DV]
  float* Ss = Vs + BC * DV;        // [HC][BC+1] scores, then probabilities
  float* Os = Ss + HC * (BC + 1);  // [HC][DV] unnormalised output
  float* row_m = Os + HC * DV;     // running max
  float* row_l = row_m + HC;       // running sum of exp
  float* row_a = row_l + HC;       // rescale factor of the current tile
  chain_start();

  const int tid = threadIdx.x;
  const int slot = slot0 + blockIdx.x;
  const int bg = blockIdx.y / p.n_head_chunks, h0 = (blockIdx.y % p.n_head_chunks) * HC;
  const int b = bg / p.G, g = bg % p.G, nh = imin(HC, p.h - h0);
  const SlotKeys sk = slot_keys(p, b, g, step_t(p, b), slot);
  const int br = int(sk.br), NK = p.n_keys[br];
  const T* k = static_cast<const T*>(p.k[br]);
  const T* v = static_cast<const T*>(p.v[br]);
  const T* q = static_cast<const T*>(p.q);

  for (int i = tid; i < HC * DK; i += blockDim.x) {
    const int r = i / DK;
    Qs[i] = r < nh ? to_f(q[(int64_t(b) * p.H + g * p.h + h0 + r) * DK + i % DK]) : 0.f;
  }
  for (int i = tid; i < HC * DV; i += blockDim.x) Os[i] = 0.f;
  for (int r = tid; r < HC; r += blockDim.x) row_m[r] = -INFINITY, row_l[r] = 0.f;

  for (int kt = sk.lo; kt < sk.hi; kt += BC) {
    __syncthreads();  // Q and row state written; the previous tile fully consumed
    // 1. K/V tile -> fp32 shared; keys past the slot's end are zeros, never read.
    simt::load_kv_tile(Ks, DK + 1, Vs, DV, k, v, b, g, NK, p.G, DK, DV, kt, sk.hi, BC);
    __syncthreads();
    // 2. Scores; -inf for padding heads and keys past the end.
    for (int i = tid; i < HC * BC; i += blockDim.x) {
      const int r = i / BC, c = i % BC, key = kt + c;
      float s = -INFINITY;
      if (r < nh && key < sk.hi) {
        float acc = 0.f;
        for (int d = 0; d < DK; ++d) acc += Qs[r * DK + d] * Ks[c * (DK + 1) + d];
        s = acc * p.scale;
        if (sk.br == Branch::Compressed) p.scores[(int64_t(bg) * p.h + h0 + r) * p.cap_c + key] = s;
      }
      Ss[r * (BC + 1) + c] = s;
    }
    __syncthreads();
    // 3. Online softmax, one warp per head; 4. O = O * alpha + P V.
    simt::online_softmax_rows(Ss, BC + 1, row_m, row_l, row_a, HC);
    __syncthreads();
    simt::rescale_accumulate_pv(Os, Ss, BC + 1, Vs, row_a, HC, DV, BC);
  }
  __syncthreads();
  // 5. The slot's partial, written even when empty (m = -inf, l = 0, o = 0).
  for (int i = tid; i < nh * DV; i += blockDim.x) p.part_o[part_row(p, bg, slot, h0 + i / DV) * DV + i % DV] = Os[i];
  for (int r = tid; r < nh; r += blockDim.x) {
    float* ml = p.part_ml + part_row(p, bg, slot, h0 + r) * 2;
    ml[0] = row_m[r];
    ml[1] = row_l[r];
  }
}

// `picks` rounds of a warp argmax over score[0 .. n_cand) into chosen[0 .. picks)
// in the order taken (the reference's definition; taken blocks become -inf).
// Lane owns candidates lane, lane+32, ... and caches its best (higher score,
// then lower index); per round two warp reductions find the winner and only its
// owner rescans. Scores are +0..+inf (or NaN), whose float bits order like the
// values.
__device__ __forceinline__ void top_n_by_rounds(float* score, int n_cand, int picks, int* chosen, int lane) {
  float bs = 0.f;
  int bi = -1;
  const auto rescan = [&] {
    bi = -1;
    for (int j = lane; j < n_cand; j += 32) {
      const float s = score[j];
      if (s != -INFINITY && (bi < 0 || s > bs)) bs = s, bi = j;
    }
  };
  rescan();
  for (int round = 0; round < picks; ++round) {
    const unsigned key = bi >= 0 ? __float_as_uint(bs) + 1u : 0u;
    const unsigned best = __reduce_max_sync(0xffffffffu, key);
    const unsigned win = __reduce_min_sync(0xffffffffu, (bi >= 0 && key == best) ? unsigned(bi) : 0xffffffffu);
    if (lane == 0) chosen[round] = int(win);
    if (bi == int(win)) {
      score[win] = -INFINITY;
      rescan();
    }
  }
}

// Grid (n_col_chunks, B*G): CTA c scores the selection blocks [64 c, 64 c + 64)
// of its (b, g). Shared: score [n_blocks], head max / den [h] x 2, chosen
// [n_sel], then col [select_keys] (the compressed keys its blocks overlap).
// Each step of this kernel is a round trip to memory on the decode step's
// critical path, so it makes few: the scores and the split partials are loaded
// at once, each CTA scores whole blocks from its own col (no second pass over
// col in global memory), and the last CTA only loads the block scores.
__global__ void __launch_bounds__(kSelectThreads) nsa_decode_select_kernel(Params p) {
  extern __shared__ float sm[];
  float* score = sm;
  float* head_m = score + p.n_blocks;
  float* head_den = head_m + p.h;
  int* chosen = reinterpret_cast<int*>(head_den + p.h);
  float* col = reinterpret_cast<float*>(chosen + p.n_sel);  // keys [klo, khi)
  __shared__ bool last;
  chain_start();

  const int tid = threadIdx.x, lane = tid % 32;
  const int bg = blockIdx.y, b = bg / p.G;
  const int t = step_t(p, b), nc = visible_cmp(p, t);
  const int n_cand = t >= 0 ? imin(t / p.sel_block + 1, p.n_blocks) : 0;
  const int j0 = blockIdx.x * kSelectBlocks, j1 = imin(j0 + kSelectBlocks, n_cand);
  const int klo = j0 < j1 ? overlap_lo(j0, p.cmp_block, p.cmp_stride, p.sel_block) : 0;
  const int khi = j0 < j1 ? imin(overlap_hi(j1 - 1, p.cmp_stride, p.sel_block), nc) : 0;
  const float* scores = p.scores + int64_t(bg) * p.h * p.cap_c;

  // 1. This thread's first key's raw scores, loaded now (launch 1 wrote them)
  //    so that they travel with the split partials below.
  const int i0 = klo + tid;
  const bool early = p.h <= kMaxHeadChunk && i0 < khi;
  float s_early[kMaxHeadChunk];
#pragma unroll
  for (int head = 0; head < kMaxHeadChunk; ++head)
    s_early[head] = early && head < p.h ? scores[int64_t(head) * p.cap_c + i0] : 0.f;
  // 2. Each head's softmax max and denominator over all compressed keys, from the
  //    split partials: a warp per head, its lanes over the splits, (m, l) pairs
  //    merged online, then over the lanes by a butterfly (each merge is
  //    symmetric, so every lane ends with the same bits; the order is fixed,
  //    so the result is the same every run).
  const auto merge = [](float& m, float& l, float mo, float lo) {
    if (lo <= 0.f) return;
    if (l <= 0.f) { m = mo, l = lo; return; }
    const float M = fmaxf(m, mo);
    l = l * expf(m - M) + lo * expf(mo - M);
    m = M;
  };
  for (int head = tid / 32; head < p.h; head += blockDim.x / 32) {
    float m = -INFINITY, l = 0.f;
    for (int s = lane; s < p.n_cmp_split; s += 32) {
      const float* ml = p.part_ml + part_row(p, bg, s, head) * 2;
      merge(m, l, ml[0], ml[1]);
    }
    for (int off = 16; off > 0; off >>= 1) {
      const float mo = __shfl_xor_sync(0xffffffffu, m, off), lo = __shfl_xor_sync(0xffffffffu, l, off);
      merge(m, l, mo, lo);
    }
    if (lane == 0) head_m[head] = m, head_den[head] = l;
  }
  __syncthreads();
  // 3. col[i] = sum over heads of p_cmp[head][i] (Eq. 10 before Eq. 9: both are
  //    sums, and summing heads first reads each score once), for the keys this
  //    CTA's blocks overlap.
  for (int i = i0; i < khi; i += blockDim.x) {
    float acc = 0.f;
    if (early && i == i0) {
#pragma unroll
      for (int head = 0; head < kMaxHeadChunk; ++head)
        if (head < p.h) acc += expf(s_early[head] - head_m[head]) / head_den[head];
    } else {
      for (int head = 0; head < p.h; ++head)
        acc += expf(scores[int64_t(head) * p.cap_c + i] - head_m[head]) / head_den[head];
    }
    col[i - klo] = acc;
  }
  __syncthreads();
  // 4. Block scores: col over the compressed blocks overlapping block j, ascending
  //    i, so equal contributions give bitwise-equal scores (exact ties, as the
  //    reference).
  for (int j = j0 + tid; j < j1; j += blockDim.x) {
    const int lo = overlap_lo(j, p.cmp_block, p.cmp_stride, p.sel_block);
    const int hi = imin(overlap_hi(j, p.cmp_stride, p.sel_block), nc);
    float sc = 0.f;
    for (int i = lo; i < hi; ++i) sc += col[i - klo];
    p.block_score[int64_t(bg) * p.n_blocks + j] = sc;
  }
  // 5. The last CTA of this (b, g) to finish picks (threadfence-reduction
  //    pattern: publish, fence, take a ticket; no CTA ever waits for another).
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(&p.counters[bg], 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  // __ldcg: other CTAs wrote them; read them from L2.
  for (int j = tid; j < n_cand; j += blockDim.x) score[j] = __ldcg(p.block_score + int64_t(bg) * p.n_blocks + j);
  __syncthreads();
  if (tid == 0) {
    if (n_cand > 0) {  // forced blocks outrank every scored one
      const int local = t / p.sel_block;
      score[0] = INFINITY;
      if (local < n_cand) score[local] = INFINITY;
      if (local >= 1 && local - 1 < n_cand) score[local - 1] = INFINITY;
    }
    p.counters[bg] = 0u;  // ready for the next step (graph replays reuse the workspace)
  }
  __syncthreads();

  // 6. Top-n by one warp, the set n rounds of an argmax take (higher score, then
  //    lower index; top_n.cuh): with at most 32 candidates one per lane, else by
  //    a threshold that leaves a few to rank (ncu: the 16 rounds over 1024
  //    candidates, one lane rescanning its 32 after each, were a large part of
  //    this kernel at 64k). The rounds stay for what the shortcuts do not take:
  //    NaN scores (NaN inputs; the rounds' order for them is the reference's)
  //    and many ties with the threshold.
  const int picks = imin(p.n_sel, n_cand);
  int* out = p.block_idx + int64_t(bg) * p.n_sel;
  __shared__ float cand_s[32];
  __shared__ int cand_j[32];
  __shared__ bool written;
  if (tid < 32) {
    bool done = false;
    if (n_cand <= 32) {
      const bool plain = __all_sync(0xffffffffu, lane >= n_cand || score[lane] >= 0.f);
      if (plain) top_n_one_per_lane(score, n_cand, picks, p.n_sel, out, lane);
      done = plain;
    } else {  // checks the scores itself (false: NaN or negative)
      done = top_n_by_threshold(score, n_cand, picks, p.n_sel, out, cand_s, cand_j, lane);
    }
    if (!done) top_n_by_rounds(score, n_cand, picks, chosen, lane);
    if (lane == 0) written = done;
  }
  __syncthreads();
  if (written) return;
  // 7. After the rounds: sorted ascending by rank (picks are distinct), -1 after them.
  for (int s = tid; s < p.n_sel; s += blockDim.x) {
    if (s < picks) {
      const int mine = chosen[s];
      int rank = 0;
      for (int r = 0; r < picks; ++r) rank += chosen[r] < mine;
      out[rank] = mine;
    } else {
      out[s] = -1;
    }
  }
}

// Grid (B*H, 3 branches). Shared: the weight e^(m_s - m) of each slot of the
// branch, then each warp's partial output [warps][dv].
// The slots are spread over the CTA (at 64k the compressed branch has ~124 of
// them: one thread per output column walking them in series made this the
// step's slowest kernel): the max is taken over every thread's slots; the sum
// of l_s e^(m_s - m) and each output column's sum run in a fixed order (a
// thread's slots ascending, then the warp's butterfly or the warps in order),
// so they are the same every run.
template <typename T>
__global__ void __launch_bounds__(kCombineThreads) nsa_decode_combine_kernel(Params p) {
  extern __shared__ float wgt[];
  constexpr int kWarps = kCombineThreads / 32;
  __shared__ float red[kWarps];
  chain_start();
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int b = blockIdx.x / p.H, hq = blockIdx.x % p.H, g = hq / p.h, head = hq % p.h, bg = b * p.G + g;
  const Branch br = Branch(blockIdx.y);
  const int s0 = br == Branch::Compressed ? 0 : br == Branch::Window ? p.n_cmp_split : p.n_cmp_split + p.n_win_split;
  const int s1 = br == Branch::Compressed ? p.n_cmp_split
                 : br == Branch::Window   ? p.n_cmp_split + p.n_win_split
                                          : p.n_slots;
  const int ns = s1 - s0;
  float* part = wgt + ns;  // [kWarps][dv]

  // Loaded at once (each load that waits for another is a round trip on the
  // step's critical path): this thread's first slot's (m, l) and, where a
  // warp's slots and a lane's columns fit in registers, the partial outputs
  // it will sum; the weights that need the max come after.
  constexpr int kRegSlots = 4, kRegCols = 4;
  float m_first = -INFINITY, l_first = 0.f;
  if (s0 + tid < s1) {
    const float* ml = p.part_ml + part_row(p, bg, s0 + tid, head) * 2;
    m_first = ml[0], l_first = ml[1];
  }
  const bool o_in_regs = ns <= kWarps * kRegSlots && p.dv <= 32 * kRegCols;
  float ov[kRegSlots][kRegCols];
#pragma unroll
  for (int k = 0; k < kRegSlots; ++k)
#pragma unroll
    for (int c = 0; c < kRegCols; ++c) {
      const int s = s0 + warp + k * kWarps, e = lane + 32 * c;
      ov[k][c] = o_in_regs && s < s1 && e < p.dv ? p.part_o[part_row(p, bg, s, head) * p.dv + e] : 0.f;
    }
  const auto slot_ml = [&](int s, float& ms, float& ls) {
    if (s == s0 + tid) {
      ms = m_first, ls = l_first;
    } else {
      const float* ml = p.part_ml + part_row(p, bg, s, head) * 2;
      ms = ml[0], ls = ml[1];
    }
  };

  float m = -INFINITY;
  for (int s = s0 + tid; s < s1; s += blockDim.x) {
    float ms, ls;
    slot_ml(s, ms, ls);
    if (ls > 0.f) m = fmaxf(m, ms);
  }
  m = warp_max(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, red[w]);
  __syncthreads();  // red is reused for the sum
  float L = 0.f;
  for (int s = s0 + tid; s < s1; s += blockDim.x) {
    float ms, ls;
    slot_ml(s, ms, ls);
    const float w = ls > 0.f ? expf(ms - m) : 0.f;  // empty slots: never read their o
    wgt[s - s0] = w;
    L += w * ls;
  }
  L = warp_sum(L);
  if (lane == 0) red[warp] = L;
  __syncthreads();
  L = 0.f;
  for (int w = 0; w < kWarps; ++w) L += red[w];
  // Warp w sums slots w, w + kWarps, ...; lane takes columns lane, lane + 32, ...
  if (o_in_regs) {
#pragma unroll
    for (int c = 0; c < kRegCols; ++c) {
      const int e = lane + 32 * c;
      if (e >= p.dv) continue;
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < kRegSlots; ++k) {
        const int s = s0 + warp + k * kWarps;
        if (s < s1 && wgt[s - s0] != 0.f) acc += wgt[s - s0] * ov[k][c];
      }
      part[warp * p.dv + e] = acc;
    }
  } else {
    for (int e = lane; e < p.dv; e += 32) {
      float acc = 0.f;
      for (int s = s0 + warp; s < s1; s += kWarps)
        if (wgt[s - s0] != 0.f) acc += wgt[s - s0] * p.part_o[part_row(p, bg, s, head) * p.dv + e];
      part[warp * p.dv + e] = acc;
    }
  }
  __syncthreads();
  T* o = static_cast<T*>(p.o[int(br)]);
  for (int e = tid; e < p.dv; e += blockDim.x) {
    float acc = 0.f;
    for (int w = 0; w < kWarps; ++w) acc += part[w * p.dv + e];
    o[(int64_t(b) * p.H + hq) * p.dv + e] = T(L > 0.f ? acc / L : 0.f);  // no key: 0, never NaN
  }
  if (tid == 0 && p.lse[int(br)]) p.lse[int(br)][int64_t(b) * p.H + hq] = L > 0.f ? m + logf(L) : INFINITY;
}

// ---- host side -----------------------------------------------------------------

struct Dims {
  int64_t B, H, G, h, dk, dv, cap, cap_c, n_blocks;
};

void check_tensor(const char* what, const at::Tensor& t, const at::Tensor& q) {
  TORCH_CHECK(t.defined(), "decode_attention: ", what, " is undefined");
  TORCH_CHECK(t.is_cuda() && t.device() == q.device(), "decode_attention: ", what, " must be on ", q.device(),
              ", got ", t.device());
  TORCH_CHECK(t.dim() == 4 && t.is_contiguous(), "decode_attention: ", what, " must be 4-D contiguous, got ",
              t.sizes());
  TORCH_CHECK(t.scalar_type() == q.scalar_type(), "decode_attention: ", what, " is ", t.scalar_type(), ", q is ",
              q.scalar_type());
}

Dims check_inputs(const DecodeCaches& c, const DecodeHyper& hp) {
  TORCH_CHECK(c.q.defined() && c.q.is_cuda(), "decode_attention: q must be a CUDA tensor");
  const std::pair<const char*, const at::Tensor*> all[] = {{"q", &c.q},         {"k_cmp", &c.k_cmp},
                                                            {"v_cmp", &c.v_cmp}, {"k_slc", &c.k_slc},
                                                            {"v_slc", &c.v_slc}, {"k_win", &c.k_win},
                                                            {"v_win", &c.v_win}};
  for (const auto& [what, t] : all) check_tensor(what, *t, c.q);
  Dims d{};
  d.B = c.q.size(0), d.H = c.q.size(2), d.dk = c.q.size(3);
  d.G = c.k_slc.size(2), d.dv = c.v_slc.size(3), d.cap = c.k_slc.size(1), d.cap_c = c.k_cmp.size(1);
  TORCH_CHECK(c.q.size(1) == 1, "decode_attention: q must be [B,1,H,dk] (one new token), got ", c.q.sizes());
  TORCH_CHECK(d.G > 0 && d.H % d.G == 0, "decode_attention: H=", d.H, " is not a multiple of G=", d.G);
  d.h = d.H / d.G;
  const auto expect = [&](const char* what, const at::Tensor& t, int64_t rows, int64_t dim) {
    TORCH_CHECK(t.size(0) == d.B && t.size(1) == rows && t.size(2) == d.G && t.size(3) == dim, "decode_attention: ",
                what, " must be [", d.B, ",", rows, ",", d.G, ",", dim, "], got ", t.sizes());
  };
  expect("k_slc", c.k_slc, d.cap, d.dk);
  expect("v_slc", c.v_slc, d.cap, d.dv);
  expect("k_win", c.k_win, d.cap, d.dk);
  expect("v_win", c.v_win, d.cap, d.dv);
  expect("k_cmp", c.k_cmp, d.cap_c, d.dk);
  expect("v_cmp", c.v_cmp, d.cap_c, d.dv);
  TORCH_CHECK(d.dk % 16 == 0 && d.dk > 0 && d.dk <= 256 && d.dv % 16 == 0 && d.dv > 0 && d.dv <= 256,
              "decode_attention: dk=", d.dk, ", dv=", d.dv, " must be multiples of 16 up to 256");
  TORCH_CHECK(c.len.defined() && c.len.is_cuda() && c.len.device() == c.q.device() &&
                  c.len.scalar_type() == at::kInt && c.len.is_contiguous() &&
                  (c.len.numel() == 1 || c.len.numel() == d.B),
              "decode_attention: len must be a contiguous int32 tensor of B=", d.B, " or 1 element on ",
              c.q.device());
  TORCH_CHECK(hp.cmp_block > 0 && hp.cmp_stride > 0 && hp.sel_block > 0 && hp.n_sel > 0 && hp.window > 0,
              "decode_attention: l, d, l', n, w must be positive");
  TORCH_CHECK(d.cap < (int64_t(1) << 30), "decode_attention: capacity ", d.cap, " too large");
  d.n_blocks = (d.cap + hp.sel_block - 1) / hp.sel_block;
  return d;
}

int device_attr(cudaDeviceAttr attr, int device) {
  int v = 0;
  NSA_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

struct WsLayout {
  int64_t scores, block_score, part_o, part_ml, total;
};
WsLayout ws_layout(const Dims& d, const DecodePlan& plan) {
  WsLayout w{};
  const int64_t bg = d.B * d.G;
  w.scores = 0;
  w.block_score = w.scores + bg * d.h * d.cap_c;
  w.part_o = w.block_score + bg * plan.n_blocks;  // the plan's: its hyper-parameters set it
  w.part_ml = w.part_o + bg * plan.n_slots * d.h * d.dv;
  w.total = w.part_ml + bg * plan.n_slots * d.h * 2;
  return w;
}

// The most compressed keys the blocks of one select CTA overlap.
int64_t select_keys(const Dims& d, const DecodeHyper& hp) {
  int64_t most = 0;
  for (int64_t j0 = 0; j0 < d.n_blocks; j0 += kSelectBlocks) {
    const int64_t j1 = std::min<int64_t>(j0 + kSelectBlocks, d.n_blocks);
    most = std::max<int64_t>(most, overlap_hi(int(j1 - 1), int(hp.cmp_stride), int(hp.sel_block)) -
                                       overlap_lo(int(j0), int(hp.cmp_block), int(hp.cmp_stride), int(hp.sel_block)));
  }
  return most;
}

// The select kernel's block scores, head max / den, picks and its CTA's col.
size_t select_smem_bytes(const Dims& d, const DecodeHyper& hp) {
  return size_t(d.n_blocks + 2 * d.h + select_keys(d, hp)) * sizeof(float) + size_t(hp.n_sel) * sizeof(int);
}

// The combine kernel's weights (one per slot of a branch) and its warps' partial outputs.
size_t combine_smem_bytes(const DecodePlan& plan, const Dims& d) {
  return (size_t(plan.n_slots) + size_t(kCombineThreads / 32) * size_t(d.dv)) * sizeof(float);
}

}  // namespace
}  // namespace decode

void launch_decode_partial_v1(at::ScalarType dtype, const decode::Params& p, int slot0, int n, bool chained) {
  if (n == 0) return;
  const size_t smem = decode::v1_smem_floats(p.head_chunk, p.dk, p.dv) * sizeof(float);
  const dim3 grid(n, p.B * p.G * p.n_head_chunks);
  NSA_DISPATCH_FLOAT_TYPES(dtype, "decode_attention", [&] {
    auto kernel = decode::nsa_decode_partial_kernel<scalar_t>;
    NSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    decode::launch_chained(kernel, grid, dim3(decode::kV1Threads), smem, at::cuda::getCurrentCUDAStream(), chained, p,
                           slot0);
  });
}

namespace {
std::atomic<int> g_cmp_split_keys{0};
std::atomic<bool> g_chained{true};
std::atomic<int> g_stop_after{4};
constexpr int64_t kMaxCmpSplits = 32;
constexpr int64_t kMaxCmpSplitKeys = 256;
}  // namespace

void set_decode_cmp_split_keys(int keys) {
  TORCH_CHECK(keys >= 0, "set_decode_cmp_split_keys: keys must be >= 0 (0 = default), got ", keys);
  g_cmp_split_keys = keys;
}
int decode_cmp_split_keys_forced() { return g_cmp_split_keys; }
void set_decode_chained_launches(bool on) { g_chained = on; }
bool decode_chained_launches() { return g_chained; }
void set_decode_stop_after(int launches) {
  TORCH_CHECK(launches >= 0 && launches <= 4, "set_decode_stop_after: 0 to 4 launches, got ", launches);
  g_stop_after = launches;
}
int decode_stop_after() { return g_stop_after; }

DecodePlan plan_decode(const DecodeCaches& c, const DecodeHyper& hp, int version) {
  using namespace decode;
  const Dims d = check_inputs(c, hp);
  TORCH_CHECK(version >= 0 && version <= 2, "decode_attention: version must be 0 (auto), 1 or 2, got ", version);
  const int device = c.q.get_device();
  const size_t optin = size_t(device_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const int sms = device_attr(cudaDevAttrMultiProcessorCount, device);

  const bool half = c.q.scalar_type() == at::kHalf || c.q.scalar_type() == at::kBFloat16;
  bool aligned = true;  // v2 copies 16-byte chunks
  for (const at::Tensor* t : {&c.q, &c.k_cmp, &c.v_cmp, &c.k_slc, &c.v_slc, &c.k_win, &c.v_win})
    aligned = aligned && aligned16(*t);
  const bool v2_ok = half && aligned && decode_v2_smem_bytes(int(d.dk), int(d.dv)) <= optin;
  TORCH_CHECK(version != 2 || v2_ok, "decode_attention: version 2 needs float16/bfloat16 (got ",
              c.q.scalar_type(), ") and 16-byte aligned tensors");
  DecodePlan plan;
  plan.version = version == 0 ? (v2_ok ? 2 : 1) : version;
  plan.n_head_chunks = int((d.h + kMaxHeadChunk - 1) / kMaxHeadChunk);
  plan.head_chunk = int((d.h + plan.n_head_chunks - 1) / plan.n_head_chunks);
  if (plan.version == 1)
    TORCH_CHECK(v1_smem_floats(plan.head_chunk, int(d.dk), int(d.dv)) * sizeof(float) <= optin,
                "decode_attention: dk=", d.dk, ", dv=", d.dv, " do not fit shared memory");
  // Window: ~64 keys per CTA. Compressed: enough CTAs that launch 1 has ~2 per SM
  // at full capacity, but at least kDefaultCmpSplitKeys keys each (fewer keys
  // per CTA only adds combine work).
  plan.n_win_split = int(std::max<int64_t>(1, (std::min(hp.window, d.cap) + kWinChunk - 1) / kWinChunk));
  const int64_t rows = d.B * d.G * plan.n_head_chunks;
  const int64_t want = (2 * sms + rows - 1) / rows - plan.n_win_split;
  // By default at most 32 splits, one per lane of the select and combine
  // launches' warps: at 64k, 124 splits of 33 keys cost those two launches more
  // than the partials saved (m7c 45.9 against 39.7 us a step with 32 of 128 keys,
  // paper_kernel 59.4 against 52.6; H200, BM_DecodeLaunchChoices before the
  // chained launches). A forced count of keys (set_decode_cmp_split_keys) lifts
  // the cap.
  const int64_t forced = decode_cmp_split_keys_forced();
  const int64_t min_keys = forced > 0 ? forced : kDefaultCmpSplitKeys;
  const int64_t most = std::max<int64_t>(1, (d.cap_c + min_keys - 1) / min_keys);
  const int64_t cap = forced > 0 ? most : kMaxCmpSplits;
  // And at least one split per kMaxCmpSplitKeys keys, however many rows the
  // batch has: a CTA walks its keys in series, one round trip to memory a tile
  // (m7c at batch 64, 64k: one split of 4,095 keys per row took launch 1 to
  // 207 us of a 285 us step, H200, BM_DecodeStepPrefix).
  const int64_t least = forced > 0 ? 1 : (d.cap_c + kMaxCmpSplitKeys - 1) / kMaxCmpSplitKeys;
  plan.n_cmp_split = int(std::clamp<int64_t>(std::max(std::min(want, cap), least), 1, most));
  plan.chained = decode_chained_launches() && device_attr(cudaDevAttrComputeCapabilityMajor, device) >= 9;
  plan.n_slots = plan.n_cmp_split + plan.n_win_split + int(hp.n_sel);
  plan.n_blocks = int(d.n_blocks);
  plan.n_col_chunks = int(std::max<int64_t>(1, (d.n_blocks + kSelectBlocks - 1) / kSelectBlocks));
  TORCH_CHECK(rows <= 65535 && d.B * d.G <= 65535, "decode_attention: B*G*ceil(h/16)=", rows, " too large");
  TORCH_CHECK(select_smem_bytes(d, hp) <= optin, "decode_attention: capacity ", d.cap,
              " needs more shared memory for the block scores than the device has");
  return plan;
}

DecodeWorkspace make_decode_workspace(const DecodeCaches& c, const DecodePlan& plan) {
  const decode::Dims d = decode::check_inputs(c, DecodeHyper{});
  const auto opts = c.q.options();
  DecodeWorkspace ws;
  ws.f32 = at::empty({decode::ws_layout(d, plan).total}, opts.dtype(at::kFloat));
  ws.counters = at::zeros({d.B * d.G}, opts.dtype(at::kInt));  // every step leaves them at 0
  return ws;
}

DecodeResult make_decode_outputs(const DecodeCaches& c, const DecodeHyper& hp) {
  const decode::Dims d = decode::check_inputs(c, hp);
  const auto opts = c.q.options();
  const auto make = [&](at::IntArrayRef sizes, const at::TensorOptions& o, double poison) {
    return poison_outputs() ? at::full(sizes, poison, o) : at::empty(sizes, o);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  DecodeResult r;
  r.o_cmp = make({d.B, 1, d.H, d.dv}, opts, nan);
  r.o_slc = make({d.B, 1, d.H, d.dv}, opts, nan);
  r.o_win = make({d.B, 1, d.H, d.dv}, opts, nan);
  r.block_idx = make({d.B, 1, d.G, hp.n_sel}, opts.dtype(at::kInt), -2);
  return r;
}

void decode_attention_out(const DecodeCaches& c, const DecodeHyper& hp, const DecodePlan& plan,
                          DecodeWorkspace& ws, DecodeResult& out) {
  using namespace decode;
  const Dims d = check_inputs(c, hp);
  c10::cuda::CUDAGuard guard(c.q.device());
  // The workspace's block scores and the select grid follow the plan's count of
  // selection blocks; the kernels index them by this call's (l' sets both).
  TORCH_CHECK(plan.n_blocks == d.n_blocks, "decode_attention: the plan has ", plan.n_blocks,
              " selection blocks a row, these hyper-parameters ", d.n_blocks, " (plan_decode with them)");
  const WsLayout lay = ws_layout(d, plan);
  TORCH_CHECK(ws.f32.defined() && ws.f32.numel() >= lay.total && ws.counters.defined() &&
                  ws.counters.numel() >= d.B * d.G,
              "decode_attention: workspace too small for this plan (make_decode_workspace)");
  for (const at::Tensor* o : {&out.o_cmp, &out.o_slc, &out.o_win})
    TORCH_CHECK(o->defined() && o->is_contiguous() && o->dim() == 4 && o->size(0) == d.B && o->size(1) == 1 &&
                    o->size(2) == d.H && o->size(3) == d.dv && o->scalar_type() == c.q.scalar_type(),
                "decode_attention: outputs must be [B,1,H,dv] (make_decode_outputs)");
  for (const at::Tensor* l : {&out.lse_cmp, &out.lse_slc, &out.lse_win})
    TORCH_CHECK(!l->defined() || (l->is_contiguous() && l->numel() == d.B * d.H && l->scalar_type() == at::kFloat &&
                                  l->device() == c.q.device()),
                "decode_attention: a logsumexp output must be float32 with B*H contiguous elements on ",
                c.q.device());
  TORCH_CHECK(out.block_idx.defined() && out.block_idx.scalar_type() == at::kInt &&
                  out.block_idx.numel() == d.B * d.G * hp.n_sel && out.block_idx.is_contiguous(),
              "decode_attention: block_idx must be int32 [B,1,G,n]");
  if (d.B == 0) return;

  Params p;
  p.q = c.q.data_ptr();
  const int W = int(Branch::Window), C = int(Branch::Compressed), S = int(Branch::Selected);
  p.k[W] = c.k_win.data_ptr(), p.v[W] = c.v_win.data_ptr(), p.n_keys[W] = int(d.cap);
  p.k[C] = c.k_cmp.data_ptr(), p.v[C] = c.v_cmp.data_ptr(), p.n_keys[C] = int(d.cap_c);
  p.k[S] = c.k_slc.data_ptr(), p.v[S] = c.v_slc.data_ptr(), p.n_keys[S] = int(d.cap);
  p.o[W] = out.o_win.data_ptr(), p.o[C] = out.o_cmp.data_ptr(), p.o[S] = out.o_slc.data_ptr();
  const auto lse_ptr = [](const at::Tensor& l) { return l.defined() ? l.data_ptr<float>() : nullptr; };
  p.lse[W] = lse_ptr(out.lse_win), p.lse[C] = lse_ptr(out.lse_cmp), p.lse[S] = lse_ptr(out.lse_slc);
  p.len = c.len.data_ptr<int>();
  p.len_stride = c.len.numel() == 1 ? 0 : 1;
  p.block_idx = out.block_idx.data_ptr<int>();
  float* ws0 = ws.f32.data_ptr<float>();
  p.scores = ws0 + lay.scores, p.block_score = ws0 + lay.block_score;
  p.part_o = ws0 + lay.part_o, p.part_ml = ws0 + lay.part_ml;
  p.counters = reinterpret_cast<unsigned*>(ws.counters.data_ptr<int>());
  p.B = int(d.B), p.H = int(d.H), p.G = int(d.G), p.h = int(d.h), p.dk = int(d.dk), p.dv = int(d.dv);
  p.cap = int(d.cap), p.cap_c = int(d.cap_c), p.n_blocks = int(d.n_blocks);
  p.cmp_block = int(hp.cmp_block), p.cmp_stride = int(hp.cmp_stride), p.sel_block = int(hp.sel_block);
  p.n_sel = int(hp.n_sel), p.window = int(hp.window);
  p.n_cmp_split = plan.n_cmp_split, p.n_win_split = plan.n_win_split, p.n_slots = plan.n_slots;
  p.head_chunk = plan.head_chunk, p.n_head_chunks = plan.n_head_chunks, p.n_col_chunks = plan.n_col_chunks;
  p.scale = float(hp.scale > 0 ? hp.scale : 1.0 / std::sqrt(double(d.dk)));

  // Launches 2-4 as programmatic dependent launches of the one before (chain_start,
  // decode_kernels.cuh) where the plan says so; launch 1 follows whatever the
  // stream held before in plain stream order.
  const auto partial = [&](int slot0, int n, bool chained) {
    if (plan.version == 2) launch_decode_partial_v2(c.q.scalar_type(), p, slot0, n, chained);
    else launch_decode_partial_v1(c.q.scalar_type(), p, slot0, n, chained);
  };
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int first = plan.n_cmp_split + plan.n_win_split;
  const int stop = decode_stop_after();  // timing only (4: every launch)
  if (stop == 0) return;
  // 1. compressed + window partials (and the raw compressed scores)
  partial(0, first, plan.chained && plan.chain_first);
  if (stop == 1) return;

  const size_t sel_smem = select_smem_bytes(d, hp);  // 2. block choice
  NSA_CUDA_CHECK(cudaFuncSetAttribute(nsa_decode_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(sel_smem)));
  launch_chained(nsa_decode_select_kernel, dim3(plan.n_col_chunks, p.B * p.G), dim3(kSelectThreads), sel_smem, stream,
                 plan.chained, p);
  if (stop == 2) return;

  partial(first, int(hp.n_sel), plan.chained);  // 3. selected partials
  if (stop == 3) return;

  NSA_DISPATCH_FLOAT_TYPES(c.q.scalar_type(), "decode_attention", [&] {  // 4. combine
    launch_chained(nsa_decode_combine_kernel<scalar_t>, dim3(p.B * p.H, 3), dim3(kCombineThreads),
                   combine_smem_bytes(plan, d), stream, plan.chained, p);
  });
}

DecodeResult decode_attention(const DecodeCaches& c, const DecodeHyper& hp, int version) {
  c10::cuda::CUDAGuard guard(c.q.device());
  const DecodePlan plan = plan_decode(c, hp, version);
  DecodeWorkspace ws = make_decode_workspace(c, plan);
  DecodeResult out = make_decode_outputs(c, hp);
  decode_attention_out(c, hp, plan, ws, out);
  return out;
}

}  // namespace nsa::cuda
