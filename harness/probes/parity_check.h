#pragma once
// The comparison behind the parity probe: one path's layer against the oracle
// (harness/probes/oracle), branch by branch and query position by query
// position, plus the blocks each group selected, the gates and the combination
// step. Pure functions of tensors, so tests can hand in a deliberately broken
// layer and check that the mismatch is named where it is.
#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/probes/oracle/nsa_oracle.h"
#include "nsa/nsa_ops.h"

namespace harness {

// What the path under test computed for the whole sequence.
struct PathRun {
  nsa::BranchOutputs branches;  // o[c] [B,S,H,dv]; block_idx [B,S,G,n], -1 padded
  at::Tensor gates;             // [B,S,H,3]; undefined when the path reported none
  at::Tensor out;               // [B,S,D]
};

// How close a correct path must come, from the dtype it computed in and the
// longest sum in the layer (L = max(D, l·dk, S): projections, φ, attention).
//   fp64: every difference is rounding of order 1e-16·L; 1e-9 of the output
//         scale leaves orders of margin and still catches a one-key error
//         (order p_j ≥ 1e-3 of the scale).
//   fp32/bf16/fp16: κ·(u + u32·√L) times the oracle's per-position sensitivity
//         (OracleOutput::sensitivity): u the unit roundoff of the stored values
//         (2^-24, 2^-8, 2^-11), u32·√L the fp32 accumulation of sums of L
//         terms whose errors add at random, κ = 6: the sensitivity is about one
//         standard deviation of that model's error, and κ = 6 keeps the largest
//         of thousands of positions below the bound.
struct ParityTolerance {
  std::string dtype;
  double unit_roundoff = 0;  // u of the stored values
  double accumulation = 0;   // u32·√L
  double kappa = 6;
  double floor = 0;  // relative to the output scale, whatever the sensitivity says
  double rounding() const { return kappa * (unit_roundoff + accumulation); }
  std::string derivation() const;
};
ParityTolerance parity_tolerance(at::ScalarType computed_in, int64_t longest_sum);

// One disagreement: the worst of its kind in one layer.
struct ParityMismatch {
  std::string what;        // "cmp" | "slc" | "win" | "selection" | "gate" | "combine"
  int64_t position = -1;   // query position t
  int64_t batch = 0;
  int64_t head = -1;       // head (branches, gates) or group (selection)
  double error = 0;        // branches/combine: relative to the output scale; gates: absolute
  double tolerance = 0;    // in the same unit, at that position
  nlohmann::json evidence = nlohmann::json::object();
};

struct LayerParity {
  nlohmann::json summary = nlohmann::json::object();  // per check: worst error/tolerance and where
  std::vector<ParityMismatch> mismatches;
};

struct ParityOptions {
  bool compare_outputs = true;  // false: selection only (an input whose outputs are all zero)
  // Selection sets that differ only where the oracle's scores are within the
  // tolerance's reach of each other are rounding, not a bug (a tie the path's
  // arithmetic cannot resolve)...
  // ...except, when set, at positions where every score is an exact binary
  // fraction whatever the order of summation: an input that makes every
  // compressed-attention weight equal (all zeros) gives weights 1/n_vis, exact
  // when n_vis is a power of two, and the tie rule (lower index) must decide.
  bool exact_ties_where_representable = false;
};

// Whether query t's compressed-attention weights, all equal, are exact binary
// fractions (no visible block, or a power of two of them).
bool uniform_weights_exact(int64_t t, const nsa::NsaParams& p);

// The oracle was evaluated at ref.positions; `run` covers the whole sequence.
// `w` (float64) for the combination step recomputed from the path's own branches.
LayerParity compare_layer(const oracle::OracleOutput& ref, const PathRun& run, const nsa::NsaWeights& w,
                          const nsa::ModelConfig& c, const ParityTolerance& tol, const ParityOptions& opts);

// The query positions to check for a sequence of S: all of them up to
// `all_up_to`, else at least `min_count`: the first and last, the window edge
// (w−2 … w+1), both sides of each compressed-block end (i·d + l − 1) and
// selection-block start (j·l') in the first kParityPrefixBlocks selection
// blocks and in kParitySites evenly spaced stretches after them (the last
// ending at S − 1), every t where a power of two of compressed blocks is
// visible, and seeded random others. Ascending, unique.
//
// Why not every boundary: there are 2·S/d + 2·S/l' of them, and the float64
// oracle's work at position t grows with t, so checking them all grew as S²
// (m7c_125m at 16k: more than 190 s at the cell's start, past the first-step
// deadline). A path's boundary bugs repeat at every boundary of a kind, or
// start from some t on (an index that overflows): the prefix sees the first
// kind, the stretches up to the end the second. The count no longer grows
// with S (under 400 at the paper's block sizes at 64k: ParityPositions.*).
constexpr int64_t kParityPrefixBlocks = 16;
constexpr int64_t kParitySites = 8;
std::vector<int64_t> parity_positions(int64_t S, const nsa::NsaParams& p, int64_t all_up_to = 256,
                                      int64_t min_count = 64, uint64_t seed = 1);

}  // namespace harness
