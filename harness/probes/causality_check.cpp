#include "harness/probes/causality_check.h"

#include <algorithm>
#include <random>
#include <set>

namespace harness {

std::vector<int64_t> causality_cut_points(int64_t S, const nsa::NsaParams& p, uint64_t seed, int random_count) {
  std::set<int64_t> cuts;
  auto add = [&](int64_t t) {
    if (t >= 0 && t <= S - 2) cuts.insert(t);
  };
  add(0), add(S - 2);
  add(p.window - 1), add(p.window), add(p.window + 1);
  const int64_t mid = S / 2;
  // Compressed block i becomes visible at e = i·d + l − 1: the two ends nearest
  // the middle, cut just before (position e−1 must not see token e) and at e.
  if (S >= p.cmp_block) {
    const int64_t i = std::max<int64_t>(0, (mid - p.cmp_block + 1) / p.cmp_stride);
    for (int64_t k = i; k <= i + 1; ++k) add(k * p.cmp_stride + p.cmp_block - 2), add(k * p.cmp_stride + p.cmp_block - 1);
  }
  // Selection block j starts at j·l': the last position of block j−1 and the first of block j.
  const int64_t j = std::max<int64_t>(1, (mid + p.sel_block / 2) / p.sel_block);
  add(j * p.sel_block - 1), add(j * p.sel_block);
  std::mt19937_64 rng(seed);
  if (S >= 2) {
    std::uniform_int_distribution<int64_t> any(0, S - 2);
    for (int k = 0; k < random_count; ++k) add(any(rng));
  }
  return {cuts.begin(), cuts.end()};
}

at::Tensor perturbed_batch(const at::Tensor& tokens, const std::vector<int64_t>& cuts, int64_t vocab, uint64_t seed) {
  const int64_t S = tokens.size(0);
  auto base = tokens.to(at::kCPU, at::kLong).contiguous();
  auto out = base.unsqueeze(0).repeat({static_cast<int64_t>(cuts.size()) + 1, 1}).contiguous();
  auto p = out.data_ptr<int64_t>();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> shift(1, vocab - 1);  // never 0: every replaced token differs
  for (size_t c = 0; c < cuts.size(); ++c)
    for (int64_t t = cuts[c] + 1; t < S; ++t) {
      auto& tok = p[(c + 1) * S + t];
      tok = (tok + shift(rng)) % vocab;
    }
  return out.to(tokens.device());
}

std::vector<CausalLeak> find_leaks(const std::vector<at::Tensor>& layers, const std::vector<int64_t>& cuts,
                                   double rel_tol) {
  std::vector<CausalLeak> leaks;
  for (size_t c = 0; c < cuts.size(); ++c) {
    const int64_t t = cuts[c];
    for (size_t l = 0; l < layers.size(); ++l) {
      auto out = layers[l].detach().to(at::kCPU, at::kDouble);
      const double scale = std::max(out[0].abs().max().item<double>(), 1e-300);
      auto change = (out[c + 1].narrow(0, 0, t + 1) - out[0].narrow(0, 0, t + 1)).abs().amax(-1) / scale;  // [t+1]
      change = at::where(at::isnan(change), at::full_like(change, INFINITY), change);
      auto moved = at::nonzero(change > rel_tol);
      if (moved.size(0) == 0) continue;
      leaks.push_back({t, moved[0][0].item<int64_t>(), static_cast<int>(l), change.max().item<double>()});
      break;  // the first layer is the one to look at
    }
  }
  return leaks;
}

std::vector<CausalLeak> find_leaks_in_forwards(const at::Tensor& batch, const std::vector<int64_t>& cuts,
                                               int64_t cuts_per_forward, double rel_tol, const LayerForward& forward) {
  const int64_t n = static_cast<int64_t>(cuts.size()), per = std::max<int64_t>(1, cuts_per_forward);
  std::vector<CausalLeak> leaks;
  for (int64_t a = 0; a < n; a += per) {
    const int64_t b = std::min(n, a + per);
    // Row 0 (unperturbed) again in every forward, then cuts a .. b-1's rows.
    const at::Tensor rows = at::cat({batch.narrow(0, 0, 1), batch.narrow(0, 1 + a, b - a)});
    const std::vector<int64_t> part(cuts.begin() + a, cuts.begin() + b);
    for (auto& l : find_leaks(forward(rows), part, rel_tol)) leaks.push_back(l);
  }
  return leaks;
}

int64_t causality_cuts_per_forward(int64_t S, int64_t heads, bool on_cuda, int64_t n_cuts, int64_t cpu_bytes) {
  if (on_cuda) return std::max<int64_t>(1, n_cuts);
  const double per_row = double(S) * double(S) * double(heads) * sizeof(double);
  const int64_t rows = static_cast<int64_t>(double(cpu_bytes) / per_row);  // row 0 is one of them
  return std::clamp<int64_t>(rows - 1, 1, std::max<int64_t>(1, n_cuts));
}

}  // namespace harness
