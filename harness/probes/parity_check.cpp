#include "harness/probes/parity_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "harness/probes/probes.h"

namespace harness {
namespace {

const char* kBranchNames[3] = {"cmp", "slc", "win"};

// A block's score is a sum of probabilities p_i, each moved by rounding by
// about p_i·|δs_i| with |δs_i| ≲ u·a_i; the probe's inputs keep logit
// magnitudes a_i of order one, so a score moves by at most ~4·κ·u of itself.
constexpr double kScoreLogitBound = 4.0;

at::Tensor nan_as_inf(const at::Tensor& t) {
  return at::where(at::isnan(t), at::full_like(t, std::numeric_limits<double>::infinity()), t);
}

// The position-and-head of the largest entry of a [B,T,H] tensor.
struct Worst {
  int64_t b = 0, ti = 0, h = 0;
  double value = 0;
};
Worst worst_of(const at::Tensor& bth) {
  auto flat = bth.contiguous().view({-1});
  const int64_t at = flat.argmax().item<int64_t>(), T = bth.size(1), H = bth.size(2);
  return {at / (T * H), (at / H) % T, at % H, flat[at].item<double>()};
}

// A differing selection explained by rounding: same count, all real
// candidates, every forced block present, and the blocks swapped in within
// `margin` (relative to the larger of the two scores) of the ones swapped out.
bool near_tie(const std::vector<int64_t>& got, const std::vector<int64_t>& want, const std::vector<double>& scores,
              int64_t t, const nsa::NsaParams& p, double margin) {
  if (got.size() != want.size()) return false;
  const int64_t n_cand = static_cast<int64_t>(scores.size());
  if (std::set<int64_t>(got.begin(), got.end()).size() != got.size()) return false;
  for (int64_t j : got)
    if (j < 0 || j >= n_cand) return false;
  for (int64_t j = 0; j < n_cand; ++j)
    if (oracle::forced_block(j, t, p) && std::find(got.begin(), got.end(), j) == got.end()) return false;
  double lowest_missed = std::numeric_limits<double>::infinity(), highest_extra = -lowest_missed;
  for (int64_t j : want)
    if (std::find(got.begin(), got.end(), j) == got.end()) lowest_missed = std::min(lowest_missed, scores[j]);
  for (int64_t j : got)
    if (std::find(want.begin(), want.end(), j) == want.end()) highest_extra = std::max(highest_extra, scores[j]);
  return lowest_missed - highest_extra <= margin * std::max(std::abs(lowest_missed), std::abs(highest_extra));
}

nlohmann::json first_values(const at::Tensor& v, int n = 4) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < std::min<int64_t>(n, v.numel()); ++i) out.push_back(v[i].item<double>());
  return out;
}

}  // namespace

std::string ParityTolerance::derivation() const {
  if (floor > 0 && unit_roundoff < 1e-15)
    return "float64 on both sides: differences are rounding of order 1e-16 times the sum lengths; tolerance " +
           fmt_double(floor) + " of the output scale";
  return dtype + ": κ·(u + u32·√L)·sensitivity with u = " + fmt_double(unit_roundoff) + ", u32·√L = " +
         fmt_double(accumulation) + ", κ = " + fmt_double(kappa) +
         "; sensitivity = first-order effect of rounding every logit, probability, value and output, per position "
         "and head (from the oracle)";
}

ParityTolerance parity_tolerance(at::ScalarType t, int64_t longest_sum) {
  ParityTolerance tol;
  const double root_l = std::sqrt(double(std::max<int64_t>(longest_sum, 1)));
  tol.accumulation = std::ldexp(1.0, -24) * root_l;
  switch (t) {
    case at::kDouble:
      tol.dtype = "fp64", tol.unit_roundoff = std::ldexp(1.0, -53), tol.floor = 1e-9;
      tol.accumulation = tol.unit_roundoff * root_l;
      break;
    case at::kFloat: tol.dtype = "fp32", tol.unit_roundoff = std::ldexp(1.0, -24); break;
    case at::kBFloat16: tol.dtype = "bf16", tol.unit_roundoff = std::ldexp(1.0, -8); break;
    case at::kHalf: tol.dtype = "fp16", tol.unit_roundoff = std::ldexp(1.0, -11); break;
    default: tol.dtype = "other", tol.unit_roundoff = std::ldexp(1.0, -8); break;
  }
  return tol;
}

LayerParity compare_layer(const oracle::OracleOutput& ref, const PathRun& run, const nsa::NsaWeights& w,
                          const nsa::ModelConfig& c, const ParityTolerance& tol, const ParityOptions& opts) {
  LayerParity r;
  const auto& T = ref.positions;
  const int64_t B = ref.batch, G = ref.groups, H = c.n_heads, hpg = H / G, nT = static_cast<int64_t>(T.size());
  auto idx = at::tensor(T, at::kLong);
  auto pick = [&](const at::Tensor& t) { return t.detach().to(at::kCPU, at::kDouble).index_select(1, idx); };
  const double ku = tol.rounding();
  // Never a zero bound: where the oracle's output is exactly zero (no visible
  // block yet) the path's must be too, and 0/0 must not hide the worst ratio.
  const double floor = std::max(tol.floor, 1e-300);

  // --- selected blocks, per (position, group) ------------------------------------
  const double margin = std::max(tol.floor, ku) * kScoreLogitBound;  // relative to the scores compared
  auto blk = run.branches.block_idx.detach().to(at::kCPU, at::kLong).index_select(1, idx).contiguous();
  const int64_t n_slots = blk.size(3);
  auto bp = blk.data_ptr<int64_t>();
  std::vector<char> excused(B * nT * G, 0);
  int64_t differing = 0, tied = 0;
  std::optional<ParityMismatch> first_sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t ti = 0; ti < nT; ++ti)
      for (int64_t g = 0; g < G; ++g) {
        std::vector<int64_t> got;
        for (int64_t s = 0; s < n_slots; ++s)
          if (int64_t j = bp[((b * nT + ti) * G + g) * n_slots + s]; j != -1) got.push_back(j);
        std::sort(got.begin(), got.end());
        const size_t row = ref.selection_row(b, ti, g);
        const auto& want = ref.selected[row];
        if (got == want) continue;
        ++differing;
        const bool exact = opts.exact_ties_where_representable && uniform_weights_exact(T[ti], c.nsa);
        if (!exact && near_tie(got, want, ref.block_scores[row], T[ti], c.nsa, margin)) {
          ++tied;
          excused[row] = 1;
          continue;
        }
        if (first_sel) continue;
        ParityMismatch m;
        m.what = "selection", m.position = T[ti], m.batch = b, m.head = g;
        m.evidence = {{"group", g}, {"selected", got}, {"expected", want}, {"scores", ref.block_scores[row]},
                      {"tie_margin_rel", exact ? 0.0 : margin}, {"exact_scores", exact}};
        first_sel = m;
      }
  r.summary["selection"] = {{"differing", differing}, {"within_tie_margin", tied}, {"tie_margin_rel", margin}};
  if (first_sel) {
    first_sel->evidence["differing_rows"] = differing - tied;
    r.mismatches.push_back(*first_sel);
  }
  if (!opts.compare_outputs) return r;

  // --- each branch, per position: error against the branch's output scale ----------
  for (int br = 0; br < 3; ++br) {
    auto want = ref.o[br];
    auto got = pick(run.branches.o[br]);
    const double scale = std::max(want.pow(2).mean().sqrt().item<double>(), 1e-300);
    auto rel = nan_as_inf((got - want).abs().amax(-1)) / scale;  // [B,T,H]
    auto bound = at::clamp_min(ku * ref.sensitivity.select(-1, br) / scale, floor);
    if (br == oracle::kSlc) {
      // A near-tie selected other blocks; that position's selected output is not comparable.
      auto skip = at::from_blob(excused.data(), {B, nT, G}, at::kChar).to(at::kBool)
                      .repeat_interleave(hpg, 2);
      rel = rel.masked_fill(skip, 0.0);
    }
    auto ratio = rel / bound;
    auto worst = worst_of(ratio);
    const double err = rel[worst.b][worst.ti][worst.h].item<double>();
    const double allowed = bound[worst.b][worst.ti][worst.h].item<double>();
    const int64_t over = (ratio > 1).sum().item<int64_t>();
    r.summary[kBranchNames[br]] = {{"max_rel_error", rel.max().item<double>()}, {"worst_ratio", worst.value},
                                   {"position", T[worst.ti]}, {"tolerance_there", allowed}, {"scale", scale}};
    if (worst.value > 1) {
      ParityMismatch m;
      m.what = kBranchNames[br], m.position = T[worst.ti], m.batch = worst.b, m.head = worst.h;
      m.error = err, m.tolerance = allowed;
      m.evidence = {{"head", worst.h}, {"batch", worst.b}, {"rel_error", err}, {"tolerance", allowed},
                    {"output_scale", scale}, {"positions_heads_over_tolerance", over},
                    {"oracle", first_values(want[worst.b][worst.ti][worst.h])},
                    {"computed", first_values(got[worst.b][worst.ti][worst.h])}};
      r.mismatches.push_back(m);
    }
  }

  // --- gates ------------------------------------------------------------------------
  at::Tensor gates = ref.gates;
  at::Tensor gate_bound = at::clamp_min(ku * (0.25 * ref.gate_sensitivity + 1.0), floor);
  if (run.gates.defined()) {
    gates = pick(run.gates);
    auto diff = nan_as_inf((gates - ref.gates).abs());     // [B,T,H,3]
    auto ratio = (diff / gate_bound).amax(-1);             // [B,T,H]
    auto worst = worst_of(ratio);
    const int64_t col = (diff / gate_bound)[worst.b][worst.ti][worst.h].argmax().item<int64_t>();
    const double err = diff[worst.b][worst.ti][worst.h][col].item<double>();
    const double allowed = gate_bound[worst.b][worst.ti][worst.h][col].item<double>();
    r.summary["gate"] = {{"max_abs_error", diff.max().item<double>()}, {"worst_ratio", worst.value},
                         {"position", T[worst.ti]}, {"tolerance_there", allowed}};
    if (worst.value > 1) {
      ParityMismatch m;
      m.what = "gate", m.position = T[worst.ti], m.batch = worst.b, m.head = worst.h;
      m.error = err, m.tolerance = allowed;
      m.evidence = {{"head", worst.h}, {"branch", kBranchNames[col]}, {"abs_error", err}, {"tolerance", allowed},
                    {"oracle", ref.gates[worst.b][worst.ti][worst.h][col].item<double>()},
                    {"computed", gates[worst.b][worst.ti][worst.h][col].item<double>()}};
      r.mismatches.push_back(m);
    }
  }

  // --- combination: the path's own branches and gates through Σ_c g_c·o_c → W_O ------
  {
    auto wo = w.wo.detach().to(at::kCPU, at::kDouble);
    at::Tensor o[3], mixed, mag;
    for (int br = 0; br < 3; ++br) {
      o[br] = pick(run.branches.o[br]);
      auto g = gates.select(-1, br).unsqueeze(-1);
      auto term = g * o[br];
      mixed = br ? mixed + term : term;
      auto m = term.abs();
      // Gates taken from the oracle (the path reported none) add their own rounding.
      if (!run.gates.defined()) m = m + gate_bound.select(-1, br).unsqueeze(-1) * o[br].abs();
      mag = br ? mag + m : m;
    }
    auto expect = at::matmul(mixed.flatten(2), wo);               // [B,T,D]
    auto bound_abs = ku * at::matmul(mag.flatten(2), wo.abs());   // [B,T,D]
    auto got = pick(run.out);
    const double scale = std::max(ref.out.pow(2).mean().sqrt().item<double>(), 1e-300);
    auto rel = nan_as_inf((got - expect).abs()) / scale;
    auto bound = at::clamp_min(bound_abs / scale, floor);
    auto ratio = (rel / bound).amax(-1, true);  // [B,T,1]
    auto worst = worst_of(ratio);
    const int64_t f = (rel / bound)[worst.b][worst.ti].argmax().item<int64_t>();
    const double err = rel[worst.b][worst.ti][f].item<double>(), allowed = bound[worst.b][worst.ti][f].item<double>();
    r.summary["combine"] = {{"max_rel_error", rel.max().item<double>()}, {"worst_ratio", worst.value},
                            {"position", T[worst.ti]}, {"tolerance_there", allowed}, {"scale", scale}};
    if (worst.value > 1) {
      ParityMismatch m;
      m.what = "combine", m.position = T[worst.ti], m.batch = worst.b;
      m.error = err, m.tolerance = allowed;
      m.evidence = {{"model_dim", f}, {"rel_error", err}, {"tolerance", allowed}, {"output_scale", scale},
                    {"expected_from_path_branches", expect[worst.b][worst.ti][f].item<double>()},
                    {"computed", got[worst.b][worst.ti][f].item<double>()}};
      r.mismatches.push_back(m);
    }
  }
  return r;
}

bool uniform_weights_exact(int64_t t, const nsa::NsaParams& p) {
  const int64_t n_vis = t + 1 >= p.cmp_block ? (t + 1 - p.cmp_block) / p.cmp_stride + 1 : 0;
  return (n_vis & (n_vis - 1)) == 0;
}

std::vector<int64_t> parity_positions(int64_t S, const nsa::NsaParams& p, int64_t all_up_to, int64_t min_count,
                                      uint64_t seed) {
  std::set<int64_t> at;
  if (S <= all_up_to) {
    for (int64_t t = 0; t < S; ++t) at.insert(t);
    return {at.begin(), at.end()};
  }
  auto add = [&](int64_t t) {
    if (t >= 0 && t < S) at.insert(t);
  };
  add(0), add(S - 1);
  for (int64_t t = p.window - 2; t <= p.window + 1; ++t) add(t);
  // Where the boundaries are checked: every one in the first kParityPrefixBlocks
  // selection blocks, then kParitySites stretches of one selection block plus
  // one compressed block each (so each holds a selection-block start and at
  // least l/d compressed-block ends), evenly spaced, the last ending at S − 1.
  const int64_t prefix = kParityPrefixBlocks * p.sel_block, span = p.sel_block + p.cmp_block;
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, prefix - 1}};  // inclusive
  for (int64_t k = 1; k <= kParitySites && prefix < S; ++k) {
    const int64_t end = prefix + k * (S - 1 - prefix) / kParitySites;
    ranges.push_back({end - span, end});
  }
  auto checked = [&](int64_t t) {
    for (const auto& [lo, hi] : ranges)
      if (t >= lo && t <= hi) return true;
    return false;
  };
  auto add_boundary = [&](int64_t t) {
    if (checked(t)) add(t);
  };
  // A compressed block i becomes visible at t = i·d + l − 1: the positions on both sides.
  for (int64_t e = p.cmp_block - 1; e < S; e += p.cmp_stride) add_boundary(e - 1), add_boundary(e);
  // A selection block starts at j·l': the last position of the previous block and the first of it.
  for (int64_t s = 0; s < S; s += p.sel_block) add_boundary(s - 1), add_boundary(s);
  // Where a uniform input's compressed weights are exact (a power of two of
  // visible blocks, uniform_weights_exact): there the zeros input's tie rule
  // must pick the lower index, at every such t however far.
  for (int64_t n = 1; p.cmp_block - 1 + (n - 1) * p.cmp_stride < S; n *= 2) add(p.cmp_block - 1 + (n - 1) * p.cmp_stride);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> any(0, S - 1);
  while (static_cast<int64_t>(at.size()) < std::min(min_count, S)) add(any(rng));
  return {at.begin(), at.end()};
}

}  // namespace harness
