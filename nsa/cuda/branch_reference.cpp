// Brute-force references: each branch builds its visibility mask straight from
// DESIGN.md §2 and calls one masked attention.
#include "nsa/cuda/branch_reference.h"

#include <limits>

#include <c10/util/Exception.h>

namespace nsa::cuda {

at::Tensor ref_masked_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& mask, double scale) {
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = k.size(2), h = H / G;
  TORCH_CHECK(G > 0 && H % G == 0, "ref attention: H=", H, " not a multiple of G=", G);
  if (k.size(1) == 0) {  // no key at all: every row is empty; keep the graph for zero grads
    return at::zeros({B, S, H, v.size(3)}, q.options()) + 0 * (q.sum() + k.sum() + v.sum());
  }
  const at::Tensor qh = q.reshape({B, S, G, h, q.size(3)}).permute({0, 2, 3, 1, 4});  // [B,G,h,S,dk]
  const at::Tensor kh = k.permute({0, 2, 1, 3}).unsqueeze(2);                         // [B,G,1,Sk,dk]
  const at::Tensor vh = v.permute({0, 2, 1, 3}).unsqueeze(2);                         // [B,G,1,Sk,dv]
  const at::Tensor m = mask.expand({B, G, S, k.size(1)}).unsqueeze(2);                // [B,G,1,S,Sk]
  at::Tensor s = at::matmul(qh, kh.transpose(-1, -2)) * scale;
  s = s.masked_fill(m.logical_not(), -std::numeric_limits<double>::infinity());
  at::Tensor mx = std::get<0>(s.max(-1, /*keepdim=*/true)).detach();
  mx = at::where(at::isfinite(mx), mx, at::zeros_like(mx));  // empty row: exp(-inf - 0) = 0
  const at::Tensor e = at::exp(s - mx);
  const at::Tensor den = e.sum(-1, /*keepdim=*/true);
  const at::Tensor p = e / at::where(den > 0, den, at::ones_like(den));
  const at::Tensor o = at::matmul(p, vh);  // [B,G,h,S,dv]
  return o.permute({0, 3, 1, 2, 4}).reshape({B, S, H, v.size(3)});
}

at::Tensor ref_window_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t window, double scale) {
  const auto opts = q.options().dtype(at::kLong);
  const at::Tensor t = at::arange(q.size(1), opts).unsqueeze(1);
  const at::Tensor key = at::arange(k.size(1), opts).unsqueeze(0);
  const at::Tensor mask = (key <= t) & (key >= t - window + 1);  // [S,Sk]
  return ref_masked_attention(q, k, v, mask, scale);
}

at::Tensor ref_compressed_attention(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                                    int64_t cmp_block, int64_t cmp_stride, double scale) {
  const auto opts = q.options().dtype(at::kLong);
  const at::Tensor t = at::arange(q.size(1), opts).unsqueeze(1);
  const at::Tensor i = at::arange(kc.size(1), opts).unsqueeze(0);
  const at::Tensor mask = (i * cmp_stride + cmp_block - 1) <= t;  // block's last token <= t
  return ref_masked_attention(q, kc, vc, mask, scale);
}

at::Tensor ref_selected_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& block_idx, int64_t sel_block, double scale) {
  const auto opts = q.options().dtype(at::kLong);
  const at::Tensor t = at::arange(q.size(1), opts).view({1, -1, 1, 1});          // [1,S,1,1]
  const at::Tensor key = at::arange(k.size(1), opts);                            // [Sk]
  const at::Tensor chosen = block_idx.to(at::kLong).to(q.device()).unsqueeze(-1);  // [B,S,G,n,1]
  // key in a chosen block (-1 matches no block), and causal.
  const at::Tensor in_block = (chosen >= 0) & (chosen == at::floor_divide(key, sel_block));
  const at::Tensor mask = in_block.any(3) & (key <= t);  // [B,S,G,Sk]
  return ref_masked_attention(q, k, v, mask.permute({0, 2, 1, 3}), scale);
}

at::Tensor ref_selection_scores(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                                int64_t cmp_stride, int64_t sel_block, double scale) {
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = kc.size(2), h = H / G;
  const int64_t Sc = kc.size(1), n_blocks = (S + sel_block - 1) / sel_block;
  const auto opts = q.options().dtype(at::kLong);
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor t = at::arange(S, opts).view({1, S, 1, 1});
  const at::Tensor j = at::arange(n_blocks, opts);
  const at::Tensor candidate = (j * sel_block).view({1, 1, 1, -1}) <= t;  // [1,S,1,n_blocks]
  if (Sc == 0) {  // no compressed block yet: every candidate scores 0
    return at::zeros({B, S, G, n_blocks}, q.options()).masked_fill(candidate.logical_not(), -inf);
  }
  // p_cmp [B,S,H,Sc]: softmax over visible compressed blocks (empty -> 0).
  const at::Tensor kh = kc.repeat_interleave(h, /*dim=*/2);                       // [B,Sc,H,dk]
  at::Tensor s = at::einsum("bshd,bchd->bshc", {q, kh}) * scale;
  const at::Tensor i = at::arange(Sc, opts);
  const at::Tensor visible = (i * cmp_stride + cmp_block - 1) <= t;  // [1,S,1,Sc]
  s = s.masked_fill(visible.logical_not(), -inf);
  at::Tensor mx = std::get<0>(s.max(-1, true));
  mx = at::where(at::isfinite(mx), mx, at::zeros_like(mx));
  const at::Tensor e = at::exp(s - mx);
  const at::Tensor den = e.sum(-1, true);
  const at::Tensor p = e / at::where(den > 0, den, at::ones_like(den));
  // Per block j: sum over overlapping i in ascending order, i in [lo_j, hi_j) where
  // [i*d, i*d+l) meets [j*l', (j+1)*l'). The explicit fixed-order sum makes equal
  // contributions give bitwise-equal scores (exact ties, like the kernel).
  const at::Tensor lo = at::clamp_min(at::floor_divide(j * sel_block - cmp_block, cmp_stride) + 1, 0);
  const at::Tensor hi = at::clamp_max(at::floor_divide((j + 1) * sel_block + cmp_stride - 1, cmp_stride), Sc);
  const int64_t max_span = (sel_block + cmp_block) / cmp_stride + 2;
  at::Tensor per_head = at::zeros({B, S, H, n_blocks}, p.options());
  for (int64_t off = 0; off < max_span; ++off) {
    const at::Tensor idx = lo + off;
    const at::Tensor ok = idx < hi;
    const at::Tensor gathered = p.index_select(3, at::clamp_max(idx, Sc - 1));
    per_head = per_head + at::where(ok, gathered, at::zeros_like(gathered));
  }
  // Sum over the group's heads, in head order.
  const at::Tensor ph = per_head.view({B, S, G, h, n_blocks});
  at::Tensor score = at::zeros({B, S, G, n_blocks}, p.options());
  for (int64_t hd = 0; hd < h; ++hd) score = score + ph.select(3, hd);
  return score.masked_fill(candidate.logical_not(), -inf);
}

at::Tensor ref_select_blocks(const at::Tensor& q, const at::Tensor& kc, int64_t cmp_block,
                             int64_t cmp_stride, int64_t sel_block, int64_t n_sel, double scale) {
  const int64_t S = q.size(1), n_blocks = (S + sel_block - 1) / sel_block;
  const auto opts = q.options().dtype(at::kLong);
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor score = ref_selection_scores(q, kc, cmp_block, cmp_stride, sel_block, scale);
  // Forced: block 0 and the local blocks t/l', t/l' - 1 outrank everything.
  const at::Tensor j = at::arange(n_blocks, opts).view({1, 1, 1, -1});
  const at::Tensor local = at::floor_divide(at::arange(S, opts), sel_block).view({1, -1, 1, 1});
  const at::Tensor forced = (j == 0) | (j == local) | (j == local - 1);
  score = score.masked_fill(forced & (j <= local), inf);
  // Highest first, ties -> lower index: a stable descending sort keeps index order.
  auto [sorted, order] = at::sort(score, /*stable=*/true, /*dim=*/-1, /*descending=*/true);
  const int64_t take = std::min(n_sel, n_blocks);
  at::Tensor pick = order.narrow(-1, 0, take);
  pick = at::where(sorted.narrow(-1, 0, take) == -inf, at::full({}, -1, opts), pick);
  if (take < n_sel) {
    auto pad_sizes = pick.sizes().vec();
    pad_sizes.back() = n_sel - take;
    pick = at::cat({pick, at::full(pad_sizes, -1, opts)}, -1);
  }
  // Ascending block index, -1 last.
  const at::Tensor big = at::full({}, std::numeric_limits<int64_t>::max(), opts);
  at::Tensor keyed = std::get<0>(at::sort(at::where(pick < 0, big, pick), -1));
  return at::where(keyed == big, at::full({}, -1, opts), keyed).to(at::kInt);
}

}  // namespace nsa::cuda
