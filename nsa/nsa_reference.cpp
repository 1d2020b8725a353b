// The oracle: every quantity of DESIGN.md §2 computed for one query at a time,
// with explicit loops and no cleverness. Tests compare every other path to this.
#include <algorithm>
#include <cmath>
#include <limits>

#include "nsa/nsa_paths.h"

namespace nsa {

std::vector<int64_t> select_top_n(const std::vector<double>& scores, int64_t t, const NsaParams& p, double* margin) {
  const int64_t cur = t / p.sel_block;         // the block holding t
  const int64_t n_cand = cur + 1;              // blocks j with j·l' ≤ t
  std::vector<int64_t> chosen;
  auto take = [&](int64_t j) {
    if (j >= 0 && j < n_cand && std::find(chosen.begin(), chosen.end(), j) == chosen.end()) chosen.push_back(j);
  };
  take(0);
  take(cur);
  take(cur - 1);
  std::vector<int64_t> rest;
  for (int64_t j = 0; j < n_cand; ++j)
    if (std::find(chosen.begin(), chosen.end(), j) == chosen.end()) rest.push_back(j);
  // Highest score first; equal scores keep ascending index (stable sort).
  std::stable_sort(rest.begin(), rest.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  if (margin) {
    const int64_t k = p.sel_count - static_cast<int64_t>(chosen.size());  // slots filled by rank
    *margin = std::numeric_limits<double>::infinity();
    if (k > 0 && k < static_cast<int64_t>(rest.size())) {
      const double in = scores[rest[k - 1]], out = scores[rest[k]];
      *margin = (in - out) / std::max({std::abs(in), std::abs(out), 1e-300});
    }
  }
  for (int64_t j : rest) {
    if (static_cast<int64_t>(chosen.size()) >= p.sel_count) break;
    chosen.push_back(j);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

namespace {
// softmax(q·Kᵀ·scale)·V over all rows of K; zero output for no keys.
at::Tensor attend(const at::Tensor& q, const at::Tensor& K, const at::Tensor& V, double scale) {
  if (K.size(0) == 0) return at::zeros({V.size(1)}, V.options());
  auto s = at::matmul(K, q) * scale;  // [n]
  auto p = at::softmax(s, 0);
  return at::matmul(p, V);            // [dv]
}
}  // namespace

BranchOutputs nsa_reference(const Projected& pj, const NsaWeights& w, const ModelConfig& c) {
  const auto& P = c.nsa;
  const auto acc = accum_dtype(pj.q.scalar_type());
  auto q = pj.q.to(acc);
  at::Tensor k[3], v[3];
  for (int b = 0; b < 3; ++b) {
    k[b] = pj.k[b].to(acc);
    v[b] = pj.v[b].to(acc);
  }
  const int64_t B = q.size(0), S = q.size(1), H = q.size(2), G = k[0].size(2), hpg = H / G;
  const double scale = 1.0 / std::sqrt(double(c.d_k));
  const int64_t n_cmp = num_cmp_blocks(S, P);

  // Compressed keys/values, one block at a time: block i = tokens [i·d, i·d+l).
  std::vector<at::Tensor> kc_blocks, vc_blocks;
  for (int64_t i = 0; i < n_cmp; ++i) {
    kc_blocks.push_back(compress_blocks(k[0].narrow(1, i * P.cmp_stride, P.cmp_block).transpose(1, 2), w.phi_k, P.phi));
    vc_blocks.push_back(compress_blocks(v[0].narrow(1, i * P.cmp_stride, P.cmp_block).transpose(1, 2), w.phi_v, P.phi));
  }
  // [B,G,n_cmp,dim]
  auto kc = n_cmp ? at::stack(kc_blocks, 2) : at::zeros({B, G, 0, c.d_k}, q.options());
  auto vc = n_cmp ? at::stack(vc_blocks, 2) : at::zeros({B, G, 0, c.d_v}, q.options());

  std::vector<at::Tensor> out[3];
  std::vector<at::Tensor> idx_rows;
  std::vector<double> margins;  // [B,S,G]
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < S; ++t) {
      const int64_t n_vis = num_visible_cmp(t, P);
      const int64_t n_sel = t / P.sel_block + 1;
      std::vector<at::Tensor> oc(H), os(H), ow(H);
      std::vector<std::vector<double>> group_scores(G, std::vector<double>(n_sel, 0.0));
      // Compressed attention, and per-head block probabilities for selection.
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / hpg;
        auto qh = q[b][t][h];
        auto Kc = kc[b][g].narrow(0, 0, n_vis), Vc = vc[b][g].narrow(0, 0, n_vis);
        oc[h] = attend(qh, Kc, Vc, scale);
        if (n_vis > 0) {
          auto pc = at::softmax(at::matmul(Kc, qh) * scale, 0).to(at::kDouble).cpu();
          auto acc_p = pc.accessor<double, 1>();
          for (int64_t j = 0; j < n_sel; ++j)
            for (int64_t i = 0; i < n_vis; ++i)
              if (cmp_overlaps_sel(i, j, P)) group_scores[g][j] += acc_p[i];
        }
      }
      // Top-n per group, then selected and window attention per head.
      std::vector<int64_t> row(G * P.sel_count, -1);
      for (int64_t g = 0; g < G; ++g) {
        double margin;
        auto chosen = select_top_n(group_scores[g], t, P, &margin);
        margins.push_back(margin);
        std::vector<int64_t> tokens;
        for (size_t s = 0; s < chosen.size(); ++s) {
          row[g * P.sel_count + s] = chosen[s];
          for (int64_t u = chosen[s] * P.sel_block; u < (chosen[s] + 1) * P.sel_block && u <= t; ++u) tokens.push_back(u);
        }
        auto tok = at::tensor(tokens, at::kLong).to(q.device());
        const int64_t w0 = std::max<int64_t>(0, t - P.window + 1);
        for (int64_t h = g * hpg; h < (g + 1) * hpg; ++h) {
          auto qh = q[b][t][h];
          os[h] = attend(qh, k[1][b].select(1, g).index_select(0, tok), v[1][b].select(1, g).index_select(0, tok), scale);
          ow[h] = attend(qh, k[2][b].select(1, g).narrow(0, w0, t - w0 + 1), v[2][b].select(1, g).narrow(0, w0, t - w0 + 1), scale);
        }
      }
      out[0].push_back(at::stack(oc));
      out[1].push_back(at::stack(os));
      out[2].push_back(at::stack(ow));
      idx_rows.push_back(at::tensor(row, at::kLong).view({G, P.sel_count}));
    }
  }
  BranchOutputs r;
  const auto dt = pj.q.scalar_type();
  for (int br = 0; br < 3; ++br) r.o[br] = at::stack(out[br]).view({B, S, H, c.d_v}).to(dt);
  r.block_idx = at::stack(idx_rows).view({B, S, G, P.sel_count}).to(q.device());
  r.selection_margin = at::tensor(margins, at::kDouble).view({B, S, G});
  return r;
}

}  // namespace nsa
