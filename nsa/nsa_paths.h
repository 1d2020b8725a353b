#pragma once
// The NSA attention paths. Each takes the same Projected inputs and returns the
// three branch outputs plus the blocks each query selected; each must agree with
// the reference (DESIGN.md §2).
#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "nsa/nsa_ops.h"
#include "nsa/runtime.h"

namespace nsa {

// Per-query brute force, written straight from the formulas; the oracle. Loops
// over batch, position and head; any dtype including float64. Slow.
BranchOutputs nsa_reference(const Projected& p, const NsaWeights& w, const ModelConfig& c);

// Vectorised over all positions with masks / gathers (NSA_PREFILL_BATCHED=1).
BranchOutputs nsa_batched(const Projected& p, const NsaWeights& w, const ModelConfig& c, const Runtime& rt, int layer);

// Top-n for one query from its per-block scores (DESIGN §2): forced blocks 0,
// ⌊t/l'⌋ and ⌊t/l'⌋−1, then the highest other candidates, ties → lower index.
// Returns ascending block indices (at most n). Shared by reference and decode,
// which compute the scores independently.
// `margin`, when given, receives how close the choice came to another: the
// relative gap between the lowest score taken by rank and the highest left
// out, +inf when no block was ranked against another (all taken, or none).
std::vector<int64_t> select_top_n(const std::vector<double>& scores, int64_t t, const NsaParams& p,
                                  double* margin = nullptr);

// Incremental state of one layer for decoding: raw compression tokens, emitted
// compressed blocks, selection/window keys and values. Out-of-place appends so
// autograd can run through a sequential prefill.
struct DecodeCache {
  std::vector<at::Tensor> k[3], v[3];  // per token: [B,G,dk] / [B,G,dv]
  // When the whole sequence's keys/values are known up front (sequential
  // prefill), the cache reads them as views of these [B,S,G,·] tensors instead
  // of per-token copies: stacking t+1 per-token tensors at every token made the
  // prefill O(S²) in tensor operations and its backward O(S²) in kernel
  // launches (minutes per step at S = 2048 on a GPU). Same values, same order.
  at::Tensor seq_k[3], seq_v[3];
  // seq_k/seq_v in the accumulation dtype, converted once (16-bit inputs: the
  // attention branches read the whole prefix at every token, and converting
  // it there cost six copies of it per token). Undefined: convert per read.
  at::Tensor seq_k_acc[3], seq_v_acc[3];
  int64_t len = 0;
  std::vector<at::Tensor> kc, vc;  // per emitted compressed block: [B,G,dk] / [B,G,dv]
  // The same blocks stacked [B,G,n_cmp,·] in the accumulation dtype, grown by
  // one at each emission: restacking every block at every token cost a copy
  // forward and, backward, a gradient accumulation into every block per token
  // (O(S²/d) kernels per layer).
  at::Tensor kc_all, vc_all;
  // overlap_matrix for at least the blocks so far (its entries do not depend
  // on its size; read through narrow), rebuilt only when it is outgrown.
  at::Tensor overlap;
  int64_t length() const { return len; }
  // Tokens [from, to) of branch b's keys / values as [B,G,n,·].
  at::Tensor keys(int b, int64_t from, int64_t to) const;
  at::Tensor values(int b, int64_t from, int64_t to) const;
  // The same in dtype `acc` (the attention branches' reads).
  at::Tensor keys_acc(int b, int64_t from, int64_t to, at::ScalarType acc) const;
  at::Tensor values_acc(int b, int64_t from, int64_t to, at::ScalarType acc) const;
};

// One decode step: appends token t's keys/values (each [B,G,·]) to the cache,
// emits a compressed block when one completes, and attends q_t [B,H,dk].
// Returns per-branch outputs [B,H,dv] and the selected blocks [B,G,n] (-1 padded).
struct DecodeOut {
  at::Tensor o[3];
  at::Tensor block_idx;
};
DecodeOut decode_step(DecodeCache& cache, const at::Tensor& q_t, const at::Tensor (&k_t)[3], const at::Tensor (&v_t)[3],
                      const NsaWeights& w, const ModelConfig& c, const Runtime& rt);

// Token by token through decode_step (NSA_PREFILL_BATCHED=0): the prefill of a
// whole sequence, reporting progress to the observer. On CUDA tensors the
// registered decode kernels run it (NSA_USE_CUDA_DECODE) unless a sequential
// mutation is planted, which lives in decode_step.
BranchOutputs nsa_sequential(const Projected& p, const NsaWeights& w, const ModelConfig& c, const Runtime& rt,
                             int layer);

// What a sequential prefill does after token t, whichever route runs it:
// progress, and the planted per-token faults. o_win_t: the token's window
// output [B,H,dv].
using TokenHook = std::function<void(int64_t t, const at::Tensor& o_win_t)>;

// Hook for the sequential prefill on CUDA (set by nsa_cuda when compiled in):
// fills the branch outputs, calling `after_token` once per token in order, or
// returns false to decline (the ATen route runs; each route is reported).
using CudaSequentialFn = bool (*)(const Projected&, const NsaWeights&, const ModelConfig&, const Runtime&,
                                  const TokenHook& after_token, BranchOutputs&);
void register_cuda_sequential(CudaSequentialFn fn);

}  // namespace nsa
