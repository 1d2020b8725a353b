#pragma once
// An NSA layer computed a second time, straight from DESIGN.md §2, for the
// parity probe to hold every path of the model against. It shares no code with
// nsa/ — not project(), apply_rope(), compress_blocks(), gate_values(),
// combine_branches() nor select_top_n() — because a bug in a helper the paths
// share with nsa_reference is invisible when the paths are compared with it.
// Only the weight struct's fields are read (layouts in nsa/nsa_weights.h).
//
// Everything runs in float64 on the CPU, one query position and one head at a
// time, and only for the positions asked for: slow and obvious on purpose.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "nsa/config.h"
#include "nsa/nsa_weights.h"

namespace harness::oracle {

inline constexpr int kCmp = 0, kSlc = 1, kWin = 2;

// What the layer computes at the query positions T (ascending, each < S).
struct OracleOutput {
  std::vector<int64_t> positions;  // T
  int64_t batch = 0, groups = 0;
  at::Tensor o[3];   // per branch (cmp, slc, win): [B,|T|,H,dv]
  at::Tensor gates;  // [B,|T|,H,3], last dim cmp, slc, win
  at::Tensor out;    // [B,|T|,D]: Σ_c g_c ⊙ o_c per head, concatenated, through W_O
  // How far rounding can move each branch output, per [B,|T|,H,3]. For an
  // attention with probabilities p_j over keys with logit magnitude
  // a_j = Σ_e |q_e·k_je|/√dk and values v_j (output o):
  //   sqrt(Σ_j (p_j·a_j·max|v_j − o|)² + Σ_j (p_j·max|v_j|)²) + rms(o)
  // — the first-order effect of a relative error of one unit in every logit
  // (q and k rounded) and every weighted value (p and v rounded), taken as
  // independent so they add in quadrature, plus the output's own rounding.
  // κ·u times it bounds the error of a correct path in a dtype of unit roundoff u.
  at::Tensor sensitivity;
  // The same for the gate logits: Σ_i |hidden_i·w2_ic| + |b2_c|, per [B,|T|,H,3].
  at::Tensor gate_sensitivity;
  // Per (b, position index, group), see selection_row(): each candidate block's
  // score (Eq. 9 by overlap, summed over the group's heads, Eq. 10) and the
  // blocks chosen, ascending.
  std::vector<std::vector<double>> block_scores;
  std::vector<std::vector<int64_t>> selected;

  size_t selection_row(int64_t b, int64_t ti, int64_t g) const {
    return static_cast<size_t>((b * static_cast<int64_t>(positions.size()) + ti) * groups + g);
  }
};

// x [B,S,D] (any dtype, any device; read as float64) → the layer at `positions`.
OracleOutput nsa_oracle(const nsa::NsaWeights& w, const at::Tensor& x, const nsa::ModelConfig& c,
                        const std::vector<int64_t>& positions);

// Top-n of DESIGN.md §2 for query t from its candidates' scores (size ⌊t/l'⌋+1):
// blocks 0, ⌊t/l'⌋ and ⌊t/l'⌋−1 forced, then the highest others, ties → lower
// index, never more than the candidates. Ascending.
std::vector<int64_t> oracle_top_n(const std::vector<double>& scores, int64_t t, const nsa::NsaParams& p);

// Whether block j is forced for query t (always chosen whatever its score).
bool forced_block(int64_t j, int64_t t, const nsa::NsaParams& p);

}  // namespace harness::oracle
