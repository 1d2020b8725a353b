#pragma once
// Building blocks shared by every NSA path: projections with RoPE, the
// compression φ, the gate, masked softmax, block arithmetic. The paths differ
// in how they walk positions (per query, vectorised, token by token), not in
// these definitions.
#include <ATen/core/Tensor.h>  // not ATen.h: nvcc reads this too (projection_epilogue.cu; nsa/cuda/nsa_cuda.h)

#include <array>
#include <vector>

#include "nsa/config.h"
#include "nsa/mutations.h"
#include "nsa/nsa_weights.h"
#include "nsa/observer.h"  // Branch

namespace nsa {

// The per-branch inputs of the attention: q RoPE'd; k RoPE'd for every branch
// (for cmp: the raw tokens, before compression); all [B,S,·,·].
struct Projected {
  at::Tensor q;           // [B,S,H,dk]
  at::Tensor k[3], v[3];  // [B,S,G,dk], [B,S,G,dv]; index by Branch
  // q as each branch's attention reads it (index by Branch): the same values,
  // on CUDA three autograd outputs of the projection's epilogue, so the three
  // gradients reach its backward apart and are summed there in one pass
  // (autograd adds them pairwise, a pass over [B,S,H,dk] each); q_branch[cmp]
  // is q. Elsewhere all three are q itself.
  at::Tensor q_branch[3];
  const at::Tensor& q_for(Branch b) const {
    const at::Tensor& t = q_branch[static_cast<int>(b)];
    return t.defined() ? t : q;
  }
};

// The three branch outputs and the selection each query made.
struct BranchOutputs {
  at::Tensor o[3];        // [B,S,H,dv]
  at::Tensor block_idx;   // [B,S,G,n] int64, selection-block indices ascending, -1 padded
  // The reference path only (CPU, float64, [B,S,G]): select_top_n's margin for
  // each row, so a test can tell a choice another precision may make
  // differently (a near tie) from a wrong one. Undefined elsewhere.
  at::Tensor selection_margin;
};

// x [B,S,D] (compute dtype) → Projected. `pos0` is the position of x's first token.
Projected project(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c, int64_t pos0 = 0);

// RoPE (base from config) on x [B,S,N,dim] at positions pos0 … pos0+S-1 (rotate-half form).
at::Tensor apply_rope(const at::Tensor& x, int64_t pos0, double base);

// The layout of one projection GEMM's output row, [q (H·dk) | k_0 … k_{n-1}
// (G·dk each) | v_0 … v_{n-1} (G·dv each)], and which parts RoPE rotates.
struct ProjectionSplit {
  int64_t n_heads = 0, n_groups = 0, d_k = 0, d_v = 0;
  int n_kv = 3;                                  // 3: NSA (cmp, slc, win); 1: dense
  std::array<bool, 3> rotate_k{true, true, true};  // q is always rotated, v never
  // Handles of q returned, 1 to 3: the first in front, q_copies - 1 more after
  // the v parts, the same values (Projected::q_branch says why).
  int q_copies = 1;
  double rope_base = 10000.0;
  int64_t width() const { return n_heads * d_k + n_kv * n_groups * (d_k + d_v); }
};

// y [B,S,width] → {q, k_0 … k_{n-1}, v_0 … v_{n-1}, then q_copies - 1 more
// handles of q}, each [B,S,heads,dim], q and the flagged keys rotated for
// positions pos0 … pos0+S-1. On a GPU with the
// CUDA build's epilogue registered: one fused kernel, every part contiguous;
// else ATen ops (the reference), the parts views of y or rotated copies.
std::vector<at::Tensor> split_projection(const at::Tensor& y, const ProjectionSplit& s, int64_t pos0);

// Hook for that kernel (set by nsa_cuda when compiled in). `rope_pos0` is the
// position RoPE gives y's first token (the mutations already applied). Returns
// an empty list to decline (e.g. a dtype it does not take): the ATen ops run.
using ProjectionEpilogueFn = std::vector<at::Tensor> (*)(const at::Tensor& y, const ProjectionSplit& s,
                                                         int64_t rope_pos0);
void register_projection_epilogue(ProjectionEpilogueFn fn);

// φ over blocks: tokens [..., l, dim] → [..., dim]. "mean": mean pooling; "mlp": the MLP with
// intra-block position embedding.
at::Tensor compress_blocks(const at::Tensor& tokens, const PhiWeights& phi, const std::string& kind);
// Every compressed block of a whole sequence at once, in the kernels' layout:
// keys or values [B,S,G,dim] → [B,n_cmp,G,dim] contiguous, n_cmp =
// num_cmp_blocks(S) (no rows when S < l). Block i holds tokens [i·d, i·d+l).
at::Tensor compress_sequence(const at::Tensor& seq, const PhiWeights& phi, const NsaParams& p);
// compress_sequence's form for 16-bit sequences when d divides l: the blocks'
// first layer as shifted sums of one GEMM over chunks of d tokens (no copy of
// the overlapping blocks). The same function; public for its float64 test.
at::Tensor compress_overlapping_chunks(const at::Tensor& seq, const PhiWeights& phi, const NsaParams& p);
// compress_sequence of the keys and of the values, each with its φ: in the
// chunked form (16-bit, d dividing l) both at once, each GEMM and elementwise
// step one launch for the two; otherwise two calls. [B,n_cmp,G,dim] each.
std::array<at::Tensor, 2> compress_sequence_pair(const at::Tensor& k, const at::Tensor& v, const PhiWeights& phi_k,
                                                 const PhiWeights& phi_v, const NsaParams& p);
// Its chunked form (k and v of one shape); public for its float64 test.
std::array<at::Tensor, 2> compress_overlapping_chunks_pair(const at::Tensor& k, const at::Tensor& v,
                                                            const PhiWeights& phi_k, const PhiWeights& phi_v,
                                                            const NsaParams& p);

// Gate values sigmoid(MLP(x)) as [B,S,H,3] (last dim: cmp, slc, win).
at::Tensor gate_values(const NsaWeights& w, const at::Tensor& x, const ModelConfig& c);

// o_t = Σ_c g_c ⊙ o_c per head, concatenated, through W_O → [B,S,D]. The sum
// runs in the registered gate combine for CUDA tensors when one is set, else in
// gated_sum.
at::Tensor combine_branches(const BranchOutputs& b, const at::Tensor& gates, const NsaWeights& w);

// Which gate column multiplies each branch's output (cmp, slc, win): column
// cols[c] of gates [B,S,H,3] weights o[c]. combine_branches picks it.
using GateColumns = std::array<int64_t, 3>;

// Σ_c gates[..., cols[c]] ⊙ o[c] → [B,S,H,dv] in o's dtype, in ATen (gates cast
// to o's dtype first): the definition, for the CPU and for parity.
at::Tensor gated_sum(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols);

// Hook for a fused gated_sum (set by nsa_cuda when compiled in, so that this
// library needs no CUDA): the same function and shapes, autograd included.
using GateCombineFn = at::Tensor (*)(const at::Tensor (&o)[3], const at::Tensor& gates, const GateColumns& cols);
void register_gate_combine(GateCombineFn fn);

// softmax over the last dim restricted to `mask` (bool, broadcastable); a row
// with no valid entry gives all zeros and zero gradient — never NaN.
at::Tensor masked_softmax(const at::Tensor& scores, const at::Tensor& mask);

// The dtype attention math runs in: float64 stays float64, everything else float32.
at::ScalarType accum_dtype(at::ScalarType t);

// Block arithmetic (DESIGN.md §2).
inline int64_t num_cmp_blocks(int64_t S, const NsaParams& p) {
  return S >= p.cmp_block ? (S - p.cmp_block) / p.cmp_stride + 1 : 0;
}
// Compressed blocks visible to query t: those whose last token is ≤ t.
inline int64_t num_visible_cmp(int64_t t, const NsaParams& p) {
  return t + 1 >= p.cmp_block ? (t + 1 - p.cmp_block) / p.cmp_stride + 1 : 0;
}
inline int64_t num_sel_blocks(int64_t S, const NsaParams& p) { return (S + p.sel_block - 1) / p.sel_block; }
// Does compressed block i ([i·d, i·d+l)) overlap selection block j ([j·l', (j+1)·l'))?
inline bool cmp_overlaps_sel(int64_t i, int64_t j, const NsaParams& p) {
  int64_t a0 = i * (mutation_on(Mutation::overlap_stride_as_block) ? p.cmp_block : p.cmp_stride), a1 = a0 + p.cmp_block;
  int64_t b0 = j * p.sel_block, b1 = b0 + p.sel_block;
  if (mutation_on(Mutation::overlap_touching_blocks)) return a0 <= b1 && b0 <= a1;
  return a0 < b1 && b0 < a1;
}

// [n_cmp, n_sel] 0/1 matrix of cmp_overlaps_sel, in `dtype`.
at::Tensor overlap_matrix(int64_t n_cmp, int64_t n_sel, const NsaParams& p, const at::TensorOptions& o);

}  // namespace nsa
