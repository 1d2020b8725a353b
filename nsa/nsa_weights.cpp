#include "nsa/nsa_weights.h"

#include "nsa/faults.h"

namespace nsa {
namespace {
constexpr double kInitStd = 0.02;

at::Tensor normal(std::vector<int64_t> shape, const at::TensorOptions& o, double std = kInitStd) {
  return (at::randn(shape, o) * std).requires_grad_();
}
at::Tensor zeros(std::vector<int64_t> shape, const at::TensorOptions& o) { return at::zeros(shape, o).requires_grad_(); }

PhiWeights init_phi(int l, int dim, const at::TensorOptions& o) {
  PhiWeights p;
  p.pe = normal({l, dim}, o);
  // Scale fc1 by 1/sqrt(l) so a block's compressed key has the magnitude of one token's.
  p.w1 = normal({int64_t(l) * dim, dim}, o, 1.0 / std::sqrt(double(l) * dim));
  p.b1 = zeros({dim}, o);
  p.w2 = normal({dim, dim}, o, 1.0 / std::sqrt(double(dim)));
  p.b2 = zeros({dim}, o);
  return p;
}
const char* kBranch[3] = {"cmp", "slc", "win"};
}  // namespace

NsaWeights init_nsa_weights(const ModelConfig& c, const at::TensorOptions& o) {
  NsaWeights w;
  const int64_t D = c.d_model, H = c.n_heads, G = c.n_kv_groups, dk = c.d_k, dv = c.d_v;
  w.wq = normal({D, H * dk}, o);
  for (int b = 0; b < 3; ++b) {
    w.wk[b] = normal({D, G * dk}, o);
    w.wv[b] = normal({D, G * dv}, o);
  }
  if (c.nsa.phi == "mlp") {
    w.phi_k = init_phi(c.nsa.cmp_block, c.d_k, o);
    w.phi_v = init_phi(c.nsa.cmp_block, c.d_v, o);
  }
  const int64_t Dg = c.gate_hidden_resolved();
  w.gate_w1 = normal({D, Dg}, o);
  w.gate_b1 = zeros({Dg}, o);
  // fc2 small random, bias 0 (DESIGN §2): gates start near 1/2 but differ per token.
  w.gate_w2 = nsa::fault_on(Fault::zero_gate_init) ? zeros({Dg, 3 * H}, o) : normal({Dg, 3 * H}, o);
  w.gate_b2 = zeros({3 * H}, o);
  w.wo = normal({H * dv, D}, o);
  return w;
}

std::vector<std::pair<std::string, at::Tensor>> NsaWeights::named() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.emplace_back("wq", wq);
  for (int b = 0; b < 3; ++b) {
    out.emplace_back(std::string("wk.") + kBranch[b], wk[b]);
    out.emplace_back(std::string("wv.") + kBranch[b], wv[b]);
  }
  auto phi = [&](const char* prefix, const PhiWeights& p) {
    if (!p.pe.defined()) return;
    out.emplace_back(std::string(prefix) + ".pe", p.pe);
    out.emplace_back(std::string(prefix) + ".w1", p.w1);
    out.emplace_back(std::string(prefix) + ".b1", p.b1);
    out.emplace_back(std::string(prefix) + ".w2", p.w2);
    out.emplace_back(std::string(prefix) + ".b2", p.b2);
  };
  phi("phi_k", phi_k);
  phi("phi_v", phi_v);
  out.emplace_back("gate.w1", gate_w1);
  out.emplace_back("gate.b1", gate_b1);
  out.emplace_back("gate.w2", gate_w2);
  out.emplace_back("gate.b2", gate_b2);
  out.emplace_back("wo", wo);
  return out;
}

}  // namespace nsa
