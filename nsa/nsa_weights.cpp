#include "nsa/nsa_weights.h"

#include <ATen/ATen.h>

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

void NsaWeights::for_each(const std::function<void(const std::string&, at::Tensor&)>& fn) {
  fn("wq", wq);
  for (int b = 0; b < 3; ++b) {
    fn(std::string("wk.") + kBranch[b], wk[b]);
    fn(std::string("wv.") + kBranch[b], wv[b]);
  }
  for (auto [prefix, p] : {std::pair<const char*, PhiWeights*>{"phi_k", &phi_k}, {"phi_v", &phi_v}}) {
    if (!p->pe.defined()) continue;  // phi == "mean": no parameters
    fn(std::string(prefix) + ".pe", p->pe);
    fn(std::string(prefix) + ".w1", p->w1);
    fn(std::string(prefix) + ".b1", p->b1);
    fn(std::string(prefix) + ".w2", p->w2);
    fn(std::string(prefix) + ".b2", p->b2);
  }
  fn("gate.w1", gate_w1);
  fn("gate.b1", gate_b1);
  fn("gate.w2", gate_w2);
  fn("gate.b2", gate_b2);
  fn("wo", wo);
}

std::vector<std::pair<std::string, at::Tensor>> NsaWeights::named() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  // The walk only reads here; the copy shares storage with this object's tensors.
  NsaWeights view = *this;
  view.for_each([&](const std::string& name, at::Tensor& t) { out.emplace_back(name, t); });
  return out;
}

NsaWeights NsaWeights::to(at::Device device, at::ScalarType dtype, bool requires_grad) const {
  NsaWeights out = *this;
  out.for_each([&](const std::string&, at::Tensor& t) {
    if (t.defined()) t = t.detach().to(device, dtype).requires_grad_(requires_grad);
  });
  return out;
}

}  // namespace nsa
