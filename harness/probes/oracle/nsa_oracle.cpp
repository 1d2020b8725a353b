// The oracle layer, one quantity of DESIGN.md §2 after another. Dense products
// of the whole sequence with a weight matrix (x·W) go through ATen's matmul in
// float64 — linear algebra, not NSA; everything NSA-specific (RoPE, blocks,
// visibility, φ, scores, top-n, the three attentions, gate, combination) is
// written out here in loops over plain arrays.
#include "harness/probes/oracle/nsa_oracle.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <stdexcept>

namespace harness::oracle {
namespace {

// A float64 CPU copy and a pointer to its row-major data.
struct Dense {
  at::Tensor t;
  const double* p = nullptr;
  explicit Dense(const at::Tensor& x) : t(x.detach().to(at::kCPU, at::kDouble).contiguous()), p(t.data_ptr<double>()) {}
};

double silu(double v) { return v / (1.0 + std::exp(-v)); }
double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// RoPE, rotate-half form: the pair (x_i, x_{i+dim/2}) turns by the angle
// pos·base^(−2i/dim).
void rope(double* x, int64_t dim, int64_t pos, double base) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = double(pos) * std::pow(base, -2.0 * double(i) / double(dim));
    const double c = std::cos(angle), s = std::sin(angle), a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

// One branch's keys and values for one group: rows of `dk` and `dv` numbers.
struct KeyValues {
  std::vector<const double*> k, v;
};

// softmax(q·kᵀ/√dk)·v over the given keys; no key → zero output (never NaN).
// Also the sensitivity described in nsa_oracle.h and the probabilities.
struct Attended {
  std::vector<double> o, p;
  double sensitivity = 0;
};
Attended attend(const double* q, const KeyValues& kv, int64_t dk, int64_t dv) {
  Attended r;
  r.o.assign(dv, 0.0);
  const size_t n = kv.k.size();
  if (n == 0) return r;
  const double scale = 1.0 / std::sqrt(double(dk));
  std::vector<double> s(n), mag(n);
  double m = -INFINITY;
  for (size_t j = 0; j < n; ++j) {
    double dot = 0, abs_dot = 0;
    for (int64_t e = 0; e < dk; ++e) dot += q[e] * kv.k[j][e], abs_dot += std::abs(q[e] * kv.k[j][e]);
    s[j] = dot * scale;
    mag[j] = abs_dot * scale;
    m = std::max(m, s[j]);
  }
  double z = 0;
  r.p.resize(n);
  for (size_t j = 0; j < n; ++j) z += (r.p[j] = std::exp(s[j] - m));
  for (size_t j = 0; j < n; ++j) {
    r.p[j] /= z;
    for (int64_t e = 0; e < dv; ++e) r.o[e] += r.p[j] * kv.v[j][e];
  }
  double spread = 0, out_sq = 0;
  for (size_t j = 0; j < n; ++j) {
    double v_max = 0, dev_max = 0;
    for (int64_t e = 0; e < dv; ++e)
      v_max = std::max(v_max, std::abs(kv.v[j][e])), dev_max = std::max(dev_max, std::abs(kv.v[j][e] - r.o[e]));
    spread += std::pow(r.p[j] * mag[j] * dev_max, 2) + std::pow(r.p[j] * v_max, 2);
  }
  for (double o : r.o) out_sq += o * o;
  r.sensitivity = std::sqrt(spread) + std::sqrt(out_sq / double(dv));
  return r;
}

// φ's weights as float64 arrays, read once per layer.
struct Phi {
  std::string kind;
  std::optional<Dense> pe, w1, b1, w2, b2;  // absent for "mean"
  Phi(const nsa::PhiWeights& w, std::string k) : kind(std::move(k)) {
    if (kind == "mean") return;
    pe.emplace(w.pe), w1.emplace(w.w1), b1.emplace(w.b1), w2.emplace(w.w2), b2.emplace(w.b2);
  }
};
// φ over one block of l roped tokens (rows of `dim`): mean pooling, or
// flatten(block + pe) → Linear(l·dim → dim) → SiLU → Linear(dim → dim).
std::vector<double> compress(const std::vector<const double*>& block, int64_t dim, const Phi& phi) {
  const int64_t l = static_cast<int64_t>(block.size());
  std::vector<double> out(dim, 0.0);
  if (phi.kind == "mean") {
    for (auto* tok : block)
      for (int64_t e = 0; e < dim; ++e) out[e] += tok[e] / double(l);
    return out;
  }
  const double *pe = phi.pe->p, *w1 = phi.w1->p, *b1 = phi.b1->p, *w2 = phi.w2->p, *b2 = phi.b2->p;
  std::vector<double> flat(l * dim), hidden(dim);
  for (int64_t u = 0; u < l; ++u)
    for (int64_t e = 0; e < dim; ++e) flat[u * dim + e] = block[u][e] + pe[u * dim + e];
  for (int64_t f = 0; f < dim; ++f) {
    double a = b1[f];
    for (int64_t i = 0; i < l * dim; ++i) a += flat[i] * w1[i * dim + f];
    hidden[f] = silu(a);
  }
  for (int64_t f = 0; f < dim; ++f) {
    double a = b2[f];
    for (int64_t i = 0; i < dim; ++i) a += hidden[i] * w2[i * dim + f];
    out[f] = a;
  }
  return out;
}

// Token rows of one sequence: [S, N, dim] as pointers to each (token, n) row.
struct Rows {
  at::Tensor t;
  double* p;
  int64_t n, dim;
  Rows(at::Tensor x, int64_t n_, int64_t dim_) : t(std::move(x)), p(t.data_ptr<double>()), n(n_), dim(dim_) {}
  double* at(int64_t token, int64_t i) const { return p + (token * n + i) * dim; }
};

}  // namespace

bool forced_block(int64_t j, int64_t t, const nsa::NsaParams& p) {
  const int64_t cur = t / p.sel_block;
  return j == 0 || j == cur || j == cur - 1;
}

std::vector<int64_t> oracle_top_n(const std::vector<double>& scores, int64_t t, const nsa::NsaParams& p) {
  const int64_t n_cand = t / p.sel_block + 1;
  if (static_cast<int64_t>(scores.size()) != n_cand) throw std::invalid_argument("oracle_top_n: one score per candidate");
  std::vector<int64_t> chosen, others;
  for (int64_t j = 0; j < n_cand; ++j) (forced_block(j, t, p) ? chosen : others).push_back(j);
  // Highest score first; on equal scores the lower index first.
  std::sort(others.begin(), others.end(), [&](int64_t a, int64_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  for (int64_t j : others) {
    if (static_cast<int64_t>(chosen.size()) >= p.sel_count) break;
    chosen.push_back(j);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

OracleOutput nsa_oracle(const nsa::NsaWeights& w, const at::Tensor& x_in, const nsa::ModelConfig& c,
                        const std::vector<int64_t>& positions) {
  const auto& P = c.nsa;
  const auto x = x_in.detach().to(at::kCPU, at::kDouble).contiguous();
  const int64_t B = x.size(0), S = x.size(1), D = x.size(2);
  const int64_t H = c.n_heads, G = c.n_kv_groups, hpg = H / G, dk = c.d_k, dv = c.d_v, T = positions.size();
  for (int64_t t : positions)
    if (t < 0 || t >= S) throw std::invalid_argument("nsa_oracle: query position out of range");
  auto dense = [](const at::Tensor& t) { return t.detach().to(at::kCPU, at::kDouble); };

  OracleOutput r;
  r.positions = positions;
  r.batch = B;
  r.groups = G;
  auto opts = at::TensorOptions().dtype(at::kDouble);
  for (auto& o : r.o) o = at::zeros({B, T, H, dv}, opts);
  r.gates = at::zeros({B, T, H, 3}, opts);
  r.out = at::zeros({B, T, D}, opts);
  r.sensitivity = at::zeros({B, T, H, 3}, opts);
  r.gate_sensitivity = at::zeros({B, T, H, 3}, opts);
  r.block_scores.resize(B * T * G);
  r.selected.resize(B * T * G);
  double* o_p[3] = {r.o[0].data_ptr<double>(), r.o[1].data_ptr<double>(), r.o[2].data_ptr<double>()};
  double* gate_p = r.gates.data_ptr<double>();
  double* out_p = r.out.data_ptr<double>();
  double* sens_p = r.sensitivity.data_ptr<double>();
  double* gsens_p = r.gate_sensitivity.data_ptr<double>();

  Dense gw1(w.gate_w1), gb1(w.gate_b1), gw2(w.gate_w2), gb2(w.gate_b2), wo(w.wo);
  const int64_t Dg = gw1.t.size(1);
  const Phi phi_k(w.phi_k, P.phi), phi_v(w.phi_v, P.phi);
  const int64_t n_cmp = S >= P.cmp_block ? (S - P.cmp_block) / P.cmp_stride + 1 : 0;

  for (int64_t b = 0; b < B; ++b) {
    auto xb = x[b];  // [S,D]
    // q = RoPE(x·W_Q); each branch its own k = x·W_K^c (RoPE'd), v = x·W_V^c.
    Rows q(at::matmul(xb, dense(w.wq)).contiguous(), H, dk);
    std::vector<Rows> k, v;
    for (int br = 0; br < 3; ++br) {
      k.emplace_back(at::matmul(xb, dense(w.wk[br])).contiguous(), G, dk);
      v.emplace_back(at::matmul(xb, dense(w.wv[br])).contiguous(), G, dv);
    }
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t h = 0; h < H; ++h) rope(q.at(s, h), dk, s, c.rope_base);
      for (int br = 0; br < 3; ++br)
        for (int64_t g = 0; g < G; ++g) rope(k[br].at(s, g), dk, s, c.rope_base);
    }
    // Compressed block i covers tokens [i·d, i·d + l): K̃_i = φ_K(roped k^cmp), Ṽ_i = φ_V(v^cmp).
    std::vector<std::vector<double>> kc(n_cmp * G), vc(n_cmp * G);
    for (int64_t i = 0; i < n_cmp; ++i)
      for (int64_t g = 0; g < G; ++g) {
        std::vector<const double*> bk, bv;
        for (int64_t u = 0; u < P.cmp_block; ++u) {
          bk.push_back(k[kCmp].at(i * P.cmp_stride + u, g));
          bv.push_back(v[kCmp].at(i * P.cmp_stride + u, g));
        }
        kc[i * G + g] = compress(bk, dk, phi_k);
        vc[i * G + g] = compress(bv, dv, phi_v);
      }

    for (int64_t ti = 0; ti < T; ++ti) {
      const int64_t t = positions[ti];
      const size_t row = static_cast<size_t>(b * T + ti);
      // Gate: sigmoid(Linear(SiLU(Linear(x_t)))), column c·H + h = branch c of head h.
      std::vector<double> hidden(Dg);
      const double* xt = xb.data_ptr<double>() + t * D;
      for (int64_t f = 0; f < Dg; ++f) {
        double a = gb1.p[f];
        for (int64_t i = 0; i < D; ++i) a += xt[i] * gw1.p[i * Dg + f];
        hidden[f] = silu(a);
      }
      for (int br = 0; br < 3; ++br)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t col = br * H + h;
          double a = gb2.p[col], mag = std::abs(gb2.p[col]);
          for (int64_t f = 0; f < Dg; ++f) a += hidden[f] * gw2.p[f * 3 * H + col], mag += std::abs(hidden[f] * gw2.p[f * 3 * H + col]);
          gate_p[(row * H + h) * 3 + br] = sigmoid(a);
          gsens_p[(row * H + h) * 3 + br] = mag;
        }

      // Compressed attention over the blocks whose last token is ≤ t.
      const int64_t n_vis = t + 1 >= P.cmp_block ? (t + 1 - P.cmp_block) / P.cmp_stride + 1 : 0;
      const int64_t cur = t / P.sel_block;
      std::vector<std::vector<double>> group_scores(G, std::vector<double>(cur + 1, 0.0));
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / hpg;
        KeyValues kv;
        for (int64_t i = 0; i < n_vis; ++i) kv.k.push_back(kc[i * G + g].data()), kv.v.push_back(vc[i * G + g].data());
        auto a = attend(q.at(t, h), kv, dk, dv);
        std::copy(a.o.begin(), a.o.end(), o_p[kCmp] + (row * H + h) * dv);
        sens_p[(row * H + h) * 3 + kCmp] = a.sensitivity;
        // Eq. 9 by overlap: block j gets p_i of every visible i with [i·d, i·d+l) ∩ [j·l', (j+1)·l') ≠ ∅;
        // Eq. 10: summed over the heads of the group.
        for (int64_t j = 0; j <= cur; ++j)
          for (int64_t i = 0; i < n_vis; ++i) {
            const int64_t a0 = i * P.cmp_stride, a1 = a0 + P.cmp_block, b0 = j * P.sel_block, b1 = b0 + P.sel_block;
            if (a0 < b1 && b0 < a1) group_scores[g][j] += a.p[i];
          }
      }
      for (int64_t g = 0; g < G; ++g) {
        const size_t sel_row = r.selection_row(b, ti, g);
        r.block_scores[sel_row] = group_scores[g];
        r.selected[sel_row] = oracle_top_n(group_scores[g], t, P);
        // Selected attention over the chosen blocks' tokens ≤ t; window over [max(0, t−w+1), t].
        KeyValues sel, win;
        for (int64_t j : r.selected[sel_row])
          for (int64_t u = j * P.sel_block; u < (j + 1) * P.sel_block && u <= t; ++u)
            sel.k.push_back(k[kSlc].at(u, g)), sel.v.push_back(v[kSlc].at(u, g));
        for (int64_t u = std::max<int64_t>(0, t - P.window + 1); u <= t; ++u)
          win.k.push_back(k[kWin].at(u, g)), win.v.push_back(v[kWin].at(u, g));
        for (int64_t h = g * hpg; h < (g + 1) * hpg; ++h) {
          auto s = attend(q.at(t, h), sel, dk, dv), wn = attend(q.at(t, h), win, dk, dv);
          std::copy(s.o.begin(), s.o.end(), o_p[kSlc] + (row * H + h) * dv);
          std::copy(wn.o.begin(), wn.o.end(), o_p[kWin] + (row * H + h) * dv);
          sens_p[(row * H + h) * 3 + kSlc] = s.sensitivity;
          sens_p[(row * H + h) * 3 + kWin] = wn.sensitivity;
        }
      }
      // o_t = Σ_c g_c ⊙ o_c per head, heads concatenated (index h·dv + e), through W_O [H·dv, D].
      for (int64_t h = 0; h < H; ++h)
        for (int64_t e = 0; e < dv; ++e) {
          double mixed = 0;
          for (int br = 0; br < 3; ++br) mixed += gate_p[(row * H + h) * 3 + br] * o_p[br][(row * H + h) * dv + e];
          for (int64_t f = 0; f < D; ++f) out_p[row * D + f] += mixed * wo.p[(h * dv + e) * D + f];
        }
    }
  }
  return r;
}

}  // namespace harness::oracle
