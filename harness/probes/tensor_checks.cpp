#include "harness/probes/tensor_checks.h"

#ifdef NSA_WITH_FINITE_SCAN
#include "harness/probes/finite_scan.h"
#endif

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace harness {

// The L1 norm of a tensor is finite exactly when every element is (a NaN or
// an infinity propagates through |x| and the sum), barring a sum of finite
// values past the accumulator's range, which can only make this say "not
// finite" where a caller's exact search then finds nothing. _foreach_norm
// reads a whole list of same-typed tensors in one multi-tensor kernel.
bool all_finite_together(const std::vector<at::Tensor>& tensors) {
  // Grouped by (device, dtype): each group is one multi-tensor launch sequence.
  std::map<std::tuple<int, int, int>, std::vector<at::Tensor>> groups;
  // Contiguous CUDA tensors of one device go to the one-launch scan instead
  // (finite_scan.h: the same answer without ~1 µs of host work per tensor).
  std::vector<at::Tensor> scan;
  for (auto& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
#ifdef NSA_WITH_FINITE_SCAN
    if (finite_scan_accepts(t) && (scan.empty() || scan.front().device() == t.device())) {
      scan.push_back(t);
      continue;
    }
#endif
    groups[{int(t.device().type()), int(t.device().index()), int(t.scalar_type())}].push_back(t.detach());
  }
#ifdef NSA_WITH_FINITE_SCAN
  if (!scan.empty() && !all_finite_by_scan(scan)) return false;
#endif
  if (groups.empty()) return true;
  const at::Device home = groups.begin()->second.front().device();
  std::vector<at::Tensor> sums;
  for (auto& [key, list] : groups) {
    // 16-bit sums are taken in fp32 (an fp16 sum passes 65504 on ordinary values).
    const auto dtype = static_cast<at::ScalarType>(std::get<2>(key));
    const bool narrow = dtype == at::kHalf || dtype == at::kBFloat16;
    auto norms = at::_foreach_norm(list, 1, narrow ? std::optional<at::ScalarType>(at::kFloat) : std::nullopt);
    sums.push_back(at::stack(norms).to(home, at::kDouble));  // one copy per group, not per tensor
  }
  return at::isfinite(at::cat(sums)).all().item<bool>();
}

bool same_4d_shapes(const std::vector<at::Tensor>& tensors) {
  for (auto& t : tensors)
    if (t.dim() != 4 || t.sizes() != tensors.front().sizes()) return false;
  return true;
}

std::optional<std::string> selection_row_violation(const std::vector<int64_t>& row, int64_t t, int64_t sel_block,
                                                   int64_t sel_count) {
  const int64_t cur = t / sel_block, expected = std::min<int64_t>(sel_count, cur + 1);
  std::vector<int64_t> seen;
  for (int64_t j : row) {
    if (j < 0) continue;
    if (j > cur) return "block " + std::to_string(j) + " starts after the query (t=" + std::to_string(t) + "): it sees the future";
    if (std::find(seen.begin(), seen.end(), j) != seen.end()) return "block " + std::to_string(j) + " selected twice";
    seen.push_back(j);
  }
  if (static_cast<int64_t>(seen.size()) != expected)
    return std::to_string(seen.size()) + " blocks selected where " + std::to_string(expected) + " are due";
  for (int64_t j : {int64_t(0), cur, cur - 1})
    if (j >= 0 && std::find(seen.begin(), seen.end(), j) == seen.end())
      return "forced block " + std::to_string(j) + " (initial or local) is missing";
  return std::nullopt;
}

at::Tensor selection_violations(const at::Tensor& block_idx, int64_t sel_block, int64_t sel_count) {
  TORCH_CHECK(block_idx.dim() == 4, "block_idx must be [B,S,G,n], got ", block_idx.sizes());
  const auto idx = block_idx.to(at::kLong);
  const int64_t S = idx.size(1);
  const auto opts = idx.options();
  const auto cur = at::arange(S, opts).div(sel_block, "floor").view({1, S, 1, 1});  // ⌊t/l'⌋
  const auto valid = idx >= 0;
  const auto future = (valid & (idx > cur)).any(-1);
  // Duplicates: sort with the empty slots pushed past every index, compare neighbours.
  const int64_t past = S / sel_block + 1;
  const auto sorted = std::get<0>(at::where(valid, idx, past).sort(-1));
  auto twice = at::zeros_like(future);
  if (idx.size(3) > 1) {
    auto a = sorted.narrow(-1, 1, idx.size(3) - 1), b = sorted.narrow(-1, 0, idx.size(3) - 1);
    twice = ((a == b) & (a < past)).any(-1);
  }
  const auto count = valid.sum(-1);
  const auto expected = at::clamp_max(cur.squeeze(-1) + 1, sel_count);
  const auto has = [&](const at::Tensor& j) { return (idx == j).any(-1); };
  const auto c = cur.squeeze(-1);
  const auto missing = ~has(at::zeros_like(cur)) | ~has(cur) | (~has(cur - 1) & (c >= 1));
  return future | twice | (count != expected) | missing;
}

}  // namespace harness
