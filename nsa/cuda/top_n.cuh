// Top-n block choice by one warp (DESIGN.md §2: the n best selection blocks of
// a query, ties to the lower index), shared by the prefill's select_blocks
// (select_blocks_tc.cu) and the decode step's select kernel
// (decode_attention.cu). Each function writes the chosen blocks ascending into
// out[0 .. n_sel) with -1 after them: the layout every selected-branch kernel
// reads. The order is `beats`: higher score, then lower index; the reference
// (v1's n rounds of an argmax) defines it, and these take the same set without
// the rounds.
#pragma once

namespace nsa::cuda {

// (score, index) a beats b: higher score, then lower index; index -1 never wins.
__device__ __forceinline__ bool beats(float sa, int ia, float sb, int ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  return sa > sb || (sa == sb && ia < ib);
}

// The top `picks` of sc[0 .. nca), nca <= 32, one candidate per lane: a block
// is taken iff fewer than `picks` candidates beat it, the same set as `picks`
// rounds of an argmax under `beats`, with 32 independent broadcasts instead of
// picks x 5 dependent shuffle levels. A NaN score beats nothing and is beaten
// by nothing, so with NaN scores more than `picks` may be taken: the slots
// still bound what is written (callers that define NaN's order otherwise test
// for it first).
__device__ __forceinline__ void top_n_one_per_lane(const float* sc, int nca, int picks, int n_sel, int* out,
                                                   int lane) {
  const bool mine = lane < nca;
  const float s = mine ? sc[lane] : -INFINITY;
  int rank = 0;
  for (int i = 0; i < nca; ++i) rank += beats(__shfl_sync(0xffffffffu, s, i), i, s, lane);
  const bool taken = mine && rank < picks;
  const unsigned mask = __ballot_sync(0xffffffffu, taken);
  const int pos = __popc(mask & ((1u << lane) - 1u));  // lanes are block indices: ascending
  if (taken && pos < n_sel) out[pos] = lane;
  for (int slot = __popc(mask) + lane; slot < n_sel; slot += 32) out[slot] = -1;
}

// The top `picks` of sc[0 .. nca), nca > 32, for one warp: the same set as
// `picks` rounds of a warp argmax under `beats`, written ascending into out
// with -1 after, but without the rounds. Each lane's best candidate is one of
// 32 distinct ones (lane l holds the blocks l mod 32); the picks-th best of
// them (the pivot) is beaten by at most picks - 1 others of them, and every
// candidate the pivot beats is beaten by at least picks: those are out. The
// rest (the pivot and whatever beats it; usually a few more than picks) are
// listed in ascending order in cand_s / cand_j (32 entries) and each ranked
// against the others, as the one-candidate-per-lane path does. False, with
// nothing written, where the shortcut does not hold and the rounds must run:
// picks > 32, a score that is NaN or negative (a sum of probabilities is
// neither; NaN inputs make the rounds' order the definition), or more than
// 32 candidates the pivot does not beat (many ties with it).
__device__ __forceinline__ bool top_n_by_threshold(const float* sc, int nca, int picks, int n_sel, int* out,
                                                   float* cand_s, int* cand_j, int lane) {
  constexpr unsigned kAll = 0xffffffffu;
  if (picks < 1 || picks > 32) return false;
  float bs = 0.f;
  int bi = -1;
  bool plain = true;
  for (int j = lane; j < nca; j += 32) {
    const float s = sc[j];
    plain &= s >= 0.f;
    if (beats(s, j, bs, bi)) bs = s, bi = j;
  }
  if (!__all_sync(kAll, plain)) return false;
  int rank = 0;  // lane bests that beat this lane's (every lane has one: nca > 32)
  for (int i = 0; i < 32; ++i) rank += beats(__shfl_sync(kAll, bs, i), __shfl_sync(kAll, bi, i), bs, bi);
  const int pivot = __ffs(__ballot_sync(kAll, rank == picks - 1)) - 1;
  const float ps = __shfl_sync(kAll, bs, pivot);
  const int pi = __shfl_sync(kAll, bi, pivot);
  __syncwarp();  // the previous query's lists are read
  int count = 0;
  for (int j0 = 0; j0 < nca; j0 += 32) {
    const int j = j0 + lane;
    const float s = j < nca ? sc[j] : 0.f;
    const bool in = j < nca && !beats(ps, pi, s, j);
    const unsigned mask = __ballot_sync(kAll, in);
    const int pos = count + __popc(mask & ((1u << lane) - 1u));
    if (in && pos < 32) cand_s[pos] = s, cand_j[pos] = j;
    count += __popc(mask);
  }
  if (count > 32) return false;
  __syncwarp();
  const bool mine = lane < count;
  const float s = mine ? cand_s[lane] : 0.f;
  const int j = mine ? cand_j[lane] : -1;
  int r = 0;
  for (int i = 0; i < count; ++i) r += beats(__shfl_sync(kAll, s, i), __shfl_sync(kAll, j, i), s, j);
  const bool taken = mine && r < picks;
  const unsigned mask = __ballot_sync(kAll, taken);
  const int pos = __popc(mask & ((1u << lane) - 1u));  // the lists are ascending: so is out
  if (taken && pos < n_sel) out[pos] = j;
  for (int slot = __popc(mask) + lane; slot < n_sel; slot += 32) out[slot] = -1;
  return true;
}

}  // namespace nsa::cuda
