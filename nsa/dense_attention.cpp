#include "nsa/dense_attention.h"

#include "nsa/nsa_ops.h"

namespace nsa {

void DenseWeights::for_each(const std::function<void(const std::string&, at::Tensor&)>& fn) {
  fn("wq", wq);
  fn("wk", wk);
  fn("wv", wv);
  fn("wo", wo);
}

std::vector<std::pair<std::string, at::Tensor>> DenseWeights::named() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  DenseWeights view = *this;  // the walk only reads; the copy shares the tensors
  view.for_each([&](const std::string& name, at::Tensor& t) { out.emplace_back(name, t); });
  return out;
}

DenseWeights init_dense_weights(const ModelConfig& c, const at::TensorOptions& o) {
  auto normal = [&](int64_t rows, int64_t cols) { return (at::randn({rows, cols}, o) * 0.02).requires_grad_(); };
  const int64_t D = c.d_model, H = c.n_heads, G = c.n_kv_groups;
  return {normal(D, H * c.d_k), normal(D, G * c.d_k), normal(D, G * c.d_v), normal(H * c.d_v, D)};
}

at::Tensor dense_attention(const DenseWeights& w, const at::Tensor& x, const ModelConfig& c) {
  const int64_t B = x.size(0), S = x.size(1), H = c.n_heads, G = c.n_kv_groups;
  const auto dt = x.scalar_type();
  // One GEMM for q, k and v, split (and q, k rotated) as the NSA layer's
  // projection is: on a GPU by the same fused kernel, so the two cells differ in
  // attention alone. [B,S,N,dim] → [B,N,S,dim], the layout SDPA takes.
  ProjectionSplit s;
  s.n_heads = H, s.n_groups = G, s.d_k = c.d_k, s.d_v = c.d_v, s.n_kv = 1, s.rope_base = c.rope_base;
  const std::vector<at::Tensor> part =
      split_projection(at::matmul(x, (w.w_qkv.defined() ? w.w_qkv : at::cat({w.wq, w.wk, w.wv}, 1)).to(dt)), s,
                       /*pos0=*/0);
  auto q = part[0].transpose(1, 2), k = part[1].transpose(1, 2), v = part[2].transpose(1, 2);
  // Each group's K/V serves its H/G consecutive heads (head h reads group h / (H/G)),
  // as in the NSA layer. Expanded here rather than through SDPA's GQA switch, which
  // not every backend takes, so the fastest kernel for the dtype is free to run.
  if (H != G) {
    k = k.repeat_interleave(H / G, 1);
    v = v.repeat_interleave(H / G, 1);
  }
  // dk ≠ dv is allowed by the math kernel; the fused ones choose themselves.
  auto o = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
  return at::matmul(o.transpose(1, 2).reshape({B, S, H * c.d_v}), w.wo.to(dt));
}

}  // namespace nsa
